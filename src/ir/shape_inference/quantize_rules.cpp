// QuantizeLinear and DequantizeLinear keep the shape; the element type comes from the zero
// point (or output_dtype, or uint8) and from the scale.

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

void quantize_linear(inference_context& ctx) {
  data_type elem = data_type::uint8;
  if (const attribute* a = ctx.node().find_attribute("output_dtype"); a && a->i != 0) elem = static_cast<data_type>(a->i);
  if (ctx.has_input(2) && ctx.input(2).elem != data_type::undefined) elem = ctx.input(2).elem;
  ctx.set_output(0, value_facts{elem, ctx.input(0).dims, std::nullopt});
}

void dequantize_linear(inference_context& ctx) {
  data_type elem = ctx.input(1).elem;
  if (const attribute* a = ctx.node().find_attribute("output_dtype"); a && a->i != 0) elem = static_cast<data_type>(a->i);
  ctx.set_output(0, value_facts{elem, ctx.input(0).dims, std::nullopt});
}

}  // namespace

void register_quantize_rules(rule_table& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
}

}  // namespace inferopt::ir::shape_inference_detail
