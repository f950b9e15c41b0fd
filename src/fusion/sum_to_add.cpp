#include "inferopt/fusion/sum_to_add.hpp"

namespace inferopt {

bool sum_to_add::run(ir::graph& g, pass_context& ctx) {
  if (ctx.onnx_opset() < 8) return false;
  std::int64_t changed = 0;
  for (ir::node* n : g.nodes()) {
    if (!n->is("Sum") || n->inputs().size() != 2 || !n->input(0) || !n->input(1)) continue;
    n->set_op_type("Add");
    ++changed;
  }
  ctx.rewrote(changed);
  return changed > 0;
}

}  // namespace inferopt
