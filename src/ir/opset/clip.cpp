// Clip takes its bounds as optional inputs from opset 11, of the input's element type,
// instead of float attributes.
//
//   before:  y = Clip(x) min=0 max=6            after:  y = Clip(x, 0, 6)
//
// Going up needs the element type of x (from its type or shape inference); going down, the
// bounds must be constants.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class clip_bounds_to_inputs_adapter final : public adapter {
 public:
  clip_bounds_to_inputs_adapter() : adapter("clip-bounds-to-inputs") {}

  bool up(step_context& ctx) const override {
    const attribute* lo = ctx.n->find_attribute("min");
    const attribute* hi = ctx.n->find_attribute("max");
    if (!lo && !hi) return false;
    const data_type type = ctx.elem_type_or_refuse(ctx.n->input(0), "a bound as an input");
    if (lo) ctx.g.set_input(ctx.n, 1, ctx.add_scalar(type, lo->f, "min"));
    if (hi) ctx.g.set_input(ctx.n, 2, ctx.add_scalar(type, hi->f, "max"));
    ctx.n->remove_attribute("min");
    ctx.n->remove_attribute("max");
    return true;
  }

  bool down(step_context& ctx) const override {
    if (ctx.n->inputs().size() <= 1) return false;
    std::vector<attribute> bounds;
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
      if (!ctx.n->input(i)) continue;
      const std::vector<double> v = ctx.attribute_floats(i);
      if (v.size() != 1) ctx.refuse("a bound must hold one value");
      bounds.push_back(attribute::make_float(i == 1 ? "min" : "max", static_cast<float>(v[0])));
    }
    ctx.rebuild("Clip", {ctx.n->input(0)}, 1);
    for (attribute& b : bounds) ctx.n->set_attribute(std::move(b));
    return true;
  }
};

}  // namespace

const adapter& clip_bounds_to_inputs() { return instance<clip_bounds_to_inputs_adapter>(); }

}  // namespace inferopt::ir::opset
