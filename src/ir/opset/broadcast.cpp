// Broadcasting before opset 7 (and 8 for the variadic ops) was explicit:
//   7  Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater and Less drop `broadcast` and
//      `axis` for numpy-style broadcasting. B was aligned with A at `axis`; numpy aligns the
//      trailing axes, so B gets trailing size-1 axes where `axis` pointed elsewhere.
//   7  PRelu's slope broadcasts numpy-style too; before, a 1-D slope ran along axis 1, so it
//      gets trailing size-1 axes for inputs of rank 3 and more.
//   8  Sum, Max, Min and Mean broadcast their inputs; going down needs inputs of one shape.
//
//   before (6):  y = Add(a, b) broadcast=1 axis=1    (a: N x C x H x W, b: C)
//   after (7):   y = Add(a, b')                      (b': C x 1 x 1, a new constant)
//
// Constants are reshaped into new initializers; other operands go through an Unsqueeze.

#include <numeric>

#include "adapters.hpp"
#include "inferopt/ir/constants.hpp"

namespace inferopt::ir::opset {
namespace {

/// `x` with `extra` size-1 axes appended, for a tensor of rank `rank`.
value* with_trailing_ones(step_context& ctx, value* x, std::int64_t rank, std::int64_t extra) {
  if (const tensor* t = constant_tensor(x, ctx.ir_version)) {
    tensor copy = *t;
    copy.dims.insert(copy.dims.end(), static_cast<std::size_t>(extra), 1);
    return ctx.add_constant(std::move(copy), "broadcast");
  }
  std::vector<std::int64_t> axes(static_cast<std::size_t>(extra));
  std::iota(axes.begin(), axes.end(), rank);
  // The Unsqueeze is a node of the target opset, which decides its form.
  if (ctx.target >= 13) return ctx.add_before("Unsqueeze", {x, ctx.add_ints(axes, "axes")}, {}, "unsqueeze")->output(0);
  return ctx.add_before("Unsqueeze", {x}, attribute_list(attribute::make_ints("axes", axes)), "unsqueeze")->output(0);
}

class legacy_broadcast_adapter final : public adapter {
 public:
  legacy_broadcast_adapter() : adapter("legacy-broadcast") {}

  bool up(step_context& ctx) const override {
    const bool explicit_axis = ctx.n->attr_int("broadcast", 0) != 0 && ctx.n->find_attribute("axis");
    if (explicit_axis) {
      const std::int64_t a = ctx.rank_or_refuse(ctx.n->input(0), "broadcasting at an axis");
      const std::int64_t b = ctx.rank_or_refuse(ctx.n->input(1), "broadcasting at an axis");
      const std::int64_t extra = a - ctx.n->attr_int("axis", 0) - b;
      if (extra < 0) ctx.refuse("axis does not fit the ranks of the inputs");
      if (extra > 0) ctx.g.set_input(ctx.n, 1, with_trailing_ones(ctx, ctx.n->input(1), b, extra));
    }
    const bool had_broadcast = ctx.n->remove_attribute("broadcast");
    return ctx.n->remove_attribute("axis") || had_broadcast;
  }
};

class prelu_slope_broadcast_adapter final : public adapter {
 public:
  prelu_slope_broadcast_adapter() : adapter("prelu-slope-broadcast") {}

  bool up(step_context& ctx) const override {
    value* slope = ctx.n->input(1);
    const std::optional<std::vector<std::int64_t>> dims = ctx.dims(slope);
    if (dims && (dims->size() != 1 || (*dims)[0] == 1)) return false;  // a shared value, or already full rank
    const std::int64_t rank = ctx.rank_or_refuse(ctx.n->input(0), "a per-channel slope");
    if (rank <= 2) return false;
    ctx.g.set_input(ctx.n, 1, with_trailing_ones(ctx, slope, 1, rank - 2));
    return true;
  }
};

class variadic_broadcast_adapter final : public adapter {
 public:
  variadic_broadcast_adapter() : adapter("variadic-broadcast") {}

  bool down(step_context& ctx) const override {
    std::optional<std::vector<std::int64_t>> first;
    for (const value* in : ctx.n->inputs()) {
      const std::optional<std::vector<std::int64_t>> dims = ctx.dims(in);
      if (!dims || (first && *dims != *first)) {
        ctx.refuse("inputs of different or unknown shapes need broadcasting, which comes at opset 8");
      }
      first = dims;
    }
    return false;
  }
};

}  // namespace

const adapter& legacy_broadcast() { return instance<legacy_broadcast_adapter>(); }

const adapter& prelu_slope_broadcast() { return instance<prelu_slope_broadcast_adapter>(); }

const adapter& variadic_broadcast() { return instance<variadic_broadcast_adapter>(); }

}  // namespace inferopt::ir::opset
