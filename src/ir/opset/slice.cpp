// Slice takes starts, ends and axes as inputs from opset 10 (and gains steps), and accepts
// negative axes from 11.
//
//   before:  y = Slice(x) starts=[0] ends=[2] axes=[1]   after:  y = Slice(x, [0], [2], [1])
//
// Going down, every operand must be a constant and the steps all 1.

#include <algorithm>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class slice_attributes_to_inputs_adapter final : public adapter {
 public:
  slice_attributes_to_inputs_adapter() : adapter("slice-attributes-to-inputs") {}

  bool up(step_context& ctx) const override {
    if (!ctx.move_ints_to_input("starts", 1) || !ctx.move_ints_to_input("ends", 2)) {
      ctx.refuse("attributes 'starts' and 'ends' are required before opset 10");
    }
    ctx.move_ints_to_input("axes", 3);
    return true;
  }

  bool down(step_context& ctx) const override {
    const std::vector<std::int64_t> starts = ctx.attribute_ints(1);
    const std::vector<std::int64_t> ends = ctx.attribute_ints(2);
    std::optional<std::vector<std::int64_t>> axes;
    if (ctx.n->input(3)) axes = ctx.attribute_ints(3);
    if (ctx.n->input(4)) {
      const std::vector<std::int64_t> steps = ctx.attribute_ints(4);
      if (std::any_of(steps.begin(), steps.end(), [](std::int64_t s) { return s != 1; })) {
        ctx.refuse("steps other than 1 have no form before opset 10");
      }
    }
    ctx.rebuild("Slice", {ctx.n->input(0)}, 1);
    ctx.n->set_attribute(attribute::make_ints("starts", starts));
    ctx.n->set_attribute(attribute::make_ints("ends", ends));
    if (axes) ctx.n->set_attribute(attribute::make_ints("axes", *axes));
    return true;
  }
};

/// Down from 11: negative entries of a constant axes input are counted from the front.
class slice_negative_axes_adapter final : public adapter {
 public:
  slice_negative_axes_adapter() : adapter("negative-axes") {}

  bool down(step_context& ctx) const override {
    if (!ctx.n->input(3)) return false;
    std::vector<std::int64_t> axes = ctx.attribute_ints(3);
    if (std::none_of(axes.begin(), axes.end(), [](std::int64_t a) { return a < 0; })) return false;
    const std::int64_t rank = ctx.rank_or_refuse(ctx.n->input(0), "a negative axis before opset 11");
    for (std::int64_t& a : axes) a = a < 0 ? a + rank : a;
    ctx.g.set_input(ctx.n, 3, ctx.add_ints(axes, "axes"));
    return true;
  }
};

}  // namespace

const adapter& slice_attributes_to_inputs() { return instance<slice_attributes_to_inputs_adapter>(); }

const adapter& slice_negative_axes() { return instance<slice_negative_axes_adapter>(); }

}  // namespace inferopt::ir::opset
