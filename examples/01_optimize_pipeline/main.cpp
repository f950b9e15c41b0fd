// Runs the -O1 pipeline on the default model through the pass manager, with structural
// verification after every pass, and checks what a user relies on: fewer nodes, no
// Identity or Dropout left, and the graph output still called "logits".

#include <iostream>

#include "inferopt/inferopt.hpp"

int main() {
  using namespace inferopt;
  try {
    ir::model m = ir::make_default_model();
    const std::size_t before = m.graph().node_count();

    pass_registry registry = builtin_registry();
    pipeline p = level_pipeline(1, registry);
    pass_manager manager;
    manager.add_instrumentation(std::make_unique<verify_each>());
    run_report report = manager.run(p, m);

    for (const pass_record& r : report.passes) {
      std::cout << r.name << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes, " << r.rewrites
                << " rewrites\n";
    }
    auto ops = ir::compute_statistics(m).ops;
    const bool clean = ops.count("Identity") == 0 && ops.count("Dropout") == 0;
    const bool named = m.graph().outputs().size() == 1 && m.graph().outputs()[0]->name() == "logits";
    std::cout << "nodes " << before << " -> " << m.graph().node_count() << "\n";
    if (!clean || !named || m.graph().node_count() >= before) {
      std::cerr << "mismatch: expected fewer nodes, no Identity/Dropout and output 'logits'\n";
      return 1;
    }
    return 0;
  } catch (const error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
