// Writes a pass of one's own, registers it beside the built-in ones and uses it from a text
// pipeline inside a fixpoint group. The pass rewrites Relu(Relu(x)) into Relu(x).

#include <iostream>

#include "inferopt/inferopt.hpp"

namespace {

class collapse_double_relu final : public inferopt::pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "collapse-double-relu"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "Relu(Relu(x)) -> Relu(x)"; }
  bool run(inferopt::ir::graph& g, inferopt::pass_context& ctx) override {
    bool changed = false;
    for (inferopt::ir::node* n : g.node_list()) {
      inferopt::ir::value* in = n->input(0);
      if (!n->is("Relu") || !in || !in->producer() || !in->producer()->is("Relu")) continue;
      if (n->output(0)->is_graph_output()) continue;  // keep graph output names
      g.replace_all_uses(n->output(0), in);
      g.erase(n);
      ctx.rewrote();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

int main() {
  using namespace inferopt;
  try {
    ir::model m = ir::make_model("relus");
    ir::graph_builder b(m.graph());
    ir::value* x = b.input("x", ir::data_type::float32, {1, 8});
    b.output(b.sigmoid(b.relu(b.relu(b.relu(x)))));

    pass_registry registry = builtin_registry();
    registry.add<collapse_double_relu>();
    pipeline p = parse_pipeline("fixpoint(collapse-double-relu,dce)", registry);
    pass_manager manager;
    run_report r = manager.run(p, m);
    std::cout << p.to_string() << ": " << r.nodes_before << " -> " << r.nodes_after << " nodes\n";
    ir::verify(m.graph());
    return r.nodes_after == 2 ? 0 : 1;  // one Relu and the Sigmoid remain
  } catch (const error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
