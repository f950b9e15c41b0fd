// GroupNormalization's scale and bias hold one value per group at opset 18 and one per
// channel from 21 (stash_type arrives with them: attribute_changes.hpp).
//
//   before (18):  scale = [s0, s1]                 (2 groups of 3 channels)
//   after (21):   scale = [s0, s0, s0, s1, s1, s1]
//
// Both directions need constant scale and bias and the channel count; going down, every
// group's channels must share their values.

#include "adapters.hpp"
#include "inferopt/ir/constants.hpp"

namespace inferopt::ir::opset {
namespace {

struct grouping {
  std::int64_t groups = 0;
  std::int64_t channels = 0;
};

grouping grouping_of(const step_context& ctx) {
  const std::int64_t groups = ctx.n->attr_int("num_groups", 0);
  const std::optional<value_type> x = ctx.facts.type(ctx.n->input(0));
  if (!x || !x->dims || x->dims->size() < 2 || !(*x->dims)[1].is_static()) {
    ctx.refuse("converting scale and bias needs the channel count, which is not known");
  }
  const std::int64_t channels = (*x->dims)[1].value();
  if (groups <= 0 || channels % groups != 0) ctx.refuse("num_groups does not divide the channels");
  return {groups, channels};
}

/// Replaces input `index`, a constant of `from` values, by one of `to` values: each value
/// repeated (up) or each run of equal values taken once (down).
void regroup(step_context& ctx, std::size_t index, std::int64_t from, std::int64_t to) {
  const value* v = ctx.n->input(index);
  const tensor* t = constant_tensor(v, ctx.ir_version);
  const std::optional<std::vector<double>> values = ctx.constant_floats(v);
  if (!t || !values) ctx.refuse("scale and bias must be constants to be regrouped");
  if (static_cast<std::int64_t>(values->size()) != from) ctx.refuse("scale and bias must hold " + std::to_string(from) + " values");
  std::vector<double> out(static_cast<std::size_t>(to));
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k] = (*values)[from > to ? k * static_cast<std::size_t>(from / to) : k / static_cast<std::size_t>(to / from)];
  }
  if (from > to) {
    for (std::size_t k = 0; k < values->size(); ++k) {
      if ((*values)[k] != out[k / static_cast<std::size_t>(from / to)]) ctx.refuse("channels of one group hold different scales or biases");
    }
  }
  ctx.g.set_input(ctx.n, index, ctx.add_constant(floats_as(*t, {to}, out), index == 1 ? "scale" : "bias"));
}

class group_norm_per_channel_adapter final : public adapter {
 public:
  group_norm_per_channel_adapter() : adapter("group-norm-per-channel") {}

  bool up(step_context& ctx) const override {
    const grouping gr = grouping_of(ctx);
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) regroup(ctx, i, gr.groups, gr.channels);
    return true;
  }

  bool down(step_context& ctx) const override {
    const grouping gr = grouping_of(ctx);
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) regroup(ctx, i, gr.channels, gr.groups);
    return true;
  }
};

}  // namespace

const adapter& group_norm_per_channel() { return instance<group_norm_per_channel_adapter>(); }

}  // namespace inferopt::ir::opset
