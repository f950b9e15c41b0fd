#include "inferopt/pass/cleanup/dead_node_elimination.hpp"

#include <algorithm>

namespace inferopt {

bool dead_node_elimination::run(ir::graph& g, pass_context& ctx) {
  std::vector<ir::node*> order = g.node_list();
  std::int64_t removed = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::node* n = *it;
    const auto outputs = n->outputs();
    const bool has_output = std::any_of(outputs.begin(), outputs.end(), [](ir::value* v) { return v != nullptr; });
    if (!has_output && !n->is_onnx_domain()) continue;
    const bool live = std::any_of(outputs.begin(), outputs.end(),
                                  [](ir::value* v) { return v && (v->has_uses() || v->is_graph_output()); });
    if (live) continue;
    g.erase(n);
    ++removed;
  }
  ctx.rewrote(removed);
  ctx.count("nodes-removed", removed);
  return removed > 0;
}

}  // namespace inferopt
