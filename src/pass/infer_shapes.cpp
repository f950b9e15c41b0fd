#include "inferopt/pass/infer_shapes.hpp"

#include "inferopt/ir/shape_inference.hpp"

namespace inferopt {

bool infer_shapes_pass::run(ir::graph& g, pass_context& ctx) {
  const ir::shape_inference_report report = ir::infer_shapes(g, ctx.model());
  ctx.count("values-typed", static_cast<std::int64_t>(report.values_typed));
  ctx.count("unknown-shapes", static_cast<std::int64_t>(report.unknown_shapes));
  return report.values_typed > 0;
}

}  // namespace inferopt
