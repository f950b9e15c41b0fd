// A program outside the inferopt tree, built against an installed inferopt.
#include <iostream>

#include <inferopt/inferopt.hpp>

int main() {
  inferopt::ir::model m = inferopt::ir::make_default_model();
  inferopt::pass_registry registry = inferopt::builtin_registry();
  inferopt::pipeline p = inferopt::level_pipeline(1, registry);
  inferopt::pass_manager manager;
  inferopt::run_report r = manager.run(p, m);
  inferopt::ir::verify(m.graph());
  std::cout << "consumer: " << r.nodes_before << " -> " << r.nodes_after << " nodes\n";
  return r.nodes_after < r.nodes_before ? 0 : 1;
}
