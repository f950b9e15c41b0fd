#include "inferopt/pass/infer_shapes.hpp"

#include "inferopt/ir/verify.hpp"

namespace inferopt {

bool infer_shapes_pass::run(ir::graph& g, pass_context& ctx) {
  ir::model copy;
  copy.ir_version = ctx.model().ir_version;
  copy.opsets = ctx.model().opsets;
  copy.replace_graph(g.clone());
  const ir::shape_inference_report report = ir::infer_shapes(copy);
  if (!report.ran) {
    ctx.count("skipped");
    return false;
  }
  std::int64_t typed = 0;
  for (const ir::value* inferred : copy.graph().values()) {
    if (!inferred->type()) continue;
    ir::value* v = g.find_value(inferred->name());
    if (!v || v->type() || v->is_initializer()) continue;
    v->set_type(inferred->type());
    ++typed;
  }
  ctx.count("values-typed", typed);
  return typed > 0;
}

}  // namespace inferopt
