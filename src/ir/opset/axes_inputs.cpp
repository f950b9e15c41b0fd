// Squeeze, Unsqueeze and ReduceSum (opset 13) and the other Reduce ops (18) take `axes` as
// input 1 instead of an attribute; the Reduce ops gain `noop_with_empty_axes` with it.
//
//   before:  y = ReduceMean(x) axes=[1]        after:  y = ReduceMean(x, [1])
//
// Going down, the axes input must be a constant; no axes stays no axes (reduce everything,
// squeeze every 1), which `noop_with_empty_axes` = 1 would turn into a copy the older form
// cannot say.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class axes_attribute_to_input_adapter final : public adapter {
 public:
  axes_attribute_to_input_adapter() : adapter("axes-attribute-to-input") {}

  bool up(step_context& ctx) const override { return ctx.move_ints_to_input("axes", 1); }

  bool down(step_context& ctx) const override {
    std::vector<std::int64_t> axes;
    if (ctx.n->input(1)) axes = ctx.attribute_ints(1);
    const bool no_axes = axes.empty();
    if (ctx.n->attr_int("noop_with_empty_axes", 0) != 0 && no_axes) {
      ctx.refuse("noop_with_empty_axes without axes has no form before opset " + std::to_string(ctx.version));
    }
    const bool had_flag = ctx.n->remove_attribute("noop_with_empty_axes");
    if (ctx.n->inputs().size() <= 1) return had_flag;
    ctx.rebuild(ctx.n->op_type(), {ctx.n->input(0)}, ctx.n->outputs().size());
    if (!no_axes) ctx.n->set_attribute(attribute::make_ints("axes", axes));
    return true;
  }
};

}  // namespace

const adapter& axes_attribute_to_input() { return instance<axes_attribute_to_input_adapter>(); }

}  // namespace inferopt::ir::opset
