// Reductions and arg-reductions.

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using namespace shape_rules;

/// Reduce*: axes are an attribute until ReduceSum-13 and the others' opset 18, then input 1.
void reduce(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const node& n = ctx.node();
  const std::int64_t since = n.op_type() == "ReduceSum" ? 13 : 18;
  const auto axes = ctx.int_list("axes", 1, since);
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  if (!axes) {
    if (keepdims) return ctx.set_output_like(0, 0, sym_shape(in->size()));
    return ctx.set_output_like(0, 0, std::nullopt);
  }
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  ctx.set_output_like(0, 0, reduce_shape<sym_dim>(*in, *axes, keepdims, noop));
}

void arg_reduce(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output(0, value_facts{data_type::int64, std::nullopt, std::nullopt});
  const std::int64_t axis = ctx.node().attr_int("axis", 0);
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  ctx.set_output(0, value_facts::of(data_type::int64, reduce_shape<sym_dim>(*in, std::vector<std::int64_t>{axis}, keepdims)));
}

}  // namespace

void register_reduce_rules(rule_table& t) {
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
                         "ReduceProd", "ReduceSum", "ReduceSumSquare"}) {
    t[op] = reduce;
  }
  t["ArgMax"] = arg_reduce;
  t["ArgMin"] = arg_reduce;
}

}  // namespace inferopt::ir::shape_inference_detail
