// Softmax, LogSoftmax and Hardmax at opset 13: before it the input is coerced to 2-D at
// `axis` (default 1) and each row of prod(shape[axis:]) values is normalized; from 13 only
// the single axis `axis` (default -1) is.
//
//   up, where a row spans more than the last axis:
//     before:  y = Softmax(x) axis=1
//     after:   s = Shape(x); f = Flatten(x) axis=1; z = Softmax(f) axis=-1; y = Reshape(z, s)
//   down, where the axis is not the last (x of rank 4):
//     before:  y = Softmax(x) axis=1
//     after:   t = Transpose(x) perm=[0,3,2,1]; z = Softmax(t) axis=3; y = Transpose(z) perm=[0,3,2,1]
//
// The two meanings agree, and only the attribute changes, when the axis is the last one or
// every axis after it has size 1. Going down otherwise needs the rank.

#include <algorithm>
#include <numeric>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

/// Whether every axis of `x` after `axis` is known to have size 1.
bool ones_after(const step_context& ctx, const value* x, std::int64_t axis) {
  const std::optional<std::vector<std::int64_t>> dims = ctx.dims(x);
  return dims && std::all_of(dims->begin() + axis + 1, dims->end(), [](std::int64_t d) { return d == 1; });
}

/// `axis` counted from the front, when the rank is known.
std::optional<std::int64_t> from_front(const step_context& ctx, const value* x, std::int64_t axis) {
  const std::optional<std::size_t> rank = ctx.rank(x);
  if (!rank) return std::nullopt;
  const auto r = static_cast<std::int64_t>(*rank);
  const std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) ctx.refuse("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return a;
}

class softmax_single_axis_adapter final : public adapter {
 public:
  softmax_single_axis_adapter() : adapter("softmax-single-axis") {}

  bool up(step_context& ctx) const override {
    value* x = ctx.n->input(0);
    const std::int64_t axis = ctx.n->attr_int("axis", 1);
    const std::optional<std::int64_t> a = from_front(ctx, x, axis);
    const std::optional<std::size_t> rank = ctx.rank(x);
    if (axis == -1 || (a && *a + 1 == static_cast<std::int64_t>(*rank))) {
      ctx.n->set_attribute(attribute::make_int("axis", -1));
      return true;
    }
    if (a && ones_after(ctx, x, *a)) {
      ctx.n->set_attribute(attribute::make_int("axis", *a));
      return true;
    }
    node* shape = ctx.add_before("Shape", {x}, {}, "shape");
    node* flat = ctx.add_before("Flatten", {x}, attribute_list(attribute::make_int("axis", a.value_or(axis))), "flatten");
    ctx.g.set_input(ctx.n, 0, flat->output(0));
    ctx.n->set_attribute(attribute::make_int("axis", -1));
    node* back = ctx.add_after("Reshape", {ctx.n->output(0), shape->output(0)}, {}, "reshape");
    ctx.take_over(ctx.n->output(0), back->output(0));
    return true;
  }

  bool down(step_context& ctx) const override {
    value* x = ctx.n->input(0);
    const std::int64_t axis = ctx.n->attr_int("axis", -1);
    // The coerced row at -1 is the last axis alone; the older default (1) must be overridden.
    if (axis == -1) {
      ctx.n->set_attribute(attribute::make_int("axis", -1));
      return true;
    }
    const std::int64_t rank = ctx.rank_or_refuse(x, "a single axis other than the last");
    const std::int64_t a = *from_front(ctx, x, axis);
    if (a == rank - 1 || ones_after(ctx, x, a)) {
      ctx.n->set_attribute(attribute::make_int("axis", a));
      return true;
    }
    std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
    std::iota(perm.begin(), perm.end(), std::int64_t{0});
    std::swap(perm[static_cast<std::size_t>(a)], perm.back());
    node* to_last = ctx.add_before("Transpose", {x}, attribute_list(attribute::make_ints("perm", perm)), "transpose");
    ctx.g.set_input(ctx.n, 0, to_last->output(0));
    ctx.n->set_attribute(attribute::make_int("axis", rank - 1));
    node* back = ctx.add_after("Transpose", {ctx.n->output(0)}, attribute_list(attribute::make_ints("perm", perm)), "transpose_back");
    ctx.take_over(ctx.n->output(0), back->output(0));
    return true;
  }
};

}  // namespace

const adapter& softmax_single_axis() { return instance<softmax_single_axis_adapter>(); }

}  // namespace inferopt::ir::opset
