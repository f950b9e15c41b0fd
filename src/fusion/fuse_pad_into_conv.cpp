#include "inferopt/fusion/fuse_pad_into_conv.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

using ints = std::vector<std::int64_t>;

struct pad_match {
  ir::node* pad = nullptr;
  ir::node* consumer = nullptr;
  ints new_pads;  // the consumer's pads with the Pad's spatial pads added
};

/// The Pad's constant fill value is 0 (omitted counts as 0).
bool pads_with_zero(const pass_context& ctx, const ir::node& pad, bool from_attribute) {
  if (from_attribute) return pad.attr_float("value", 0.0f) == 0.0f;
  const ir::value* v = pad.input(2);
  if (!v) return true;
  const std::optional<std::vector<double>> value = ir::constant_floats(v, ctx.ir_version());
  return value && value->size() == 1 && (*value)[0] == 0.0;
}

/// The Pad's pads as (begin per axis, end per axis) over all `rank` axes; nullopt when they
/// are not constant, not well formed, or need an unknown rank.
std::optional<ints> full_pads(const pass_context& ctx, const ir::node& pad, bool from_attribute) {
  const std::optional<ir::int_list> pads = ir::int_list_operand(pad, "pads", 1, from_attribute, ctx.ir_version());
  if (!pads || !pads->present || pads->values.size() % 2 != 0) return std::nullopt;
  const std::size_t listed = pads->values.size() / 2;
  std::optional<ir::int_list> axes = ir::int_list{};
  if (!from_attribute && ctx.onnx_opset() >= 18) axes = ir::int_list_operand(pad, "axes", 3, false, ctx.ir_version());
  if (!axes) return std::nullopt;
  if (!axes->present) return pads->values;
  const std::optional<std::size_t> rank = ir::known_rank(pad.input(0));
  if (!rank || axes->values.size() != listed) return std::nullopt;
  const auto r = static_cast<std::int64_t>(*rank);
  ints out(2 * *rank, 0);
  std::vector<bool> seen(*rank, false);
  for (std::size_t k = 0; k < listed; ++k) {
    std::int64_t axis = axes->values[k];
    if (axis < -r || axis >= r) return std::nullopt;
    if (axis < 0) axis += r;
    const auto a = static_cast<std::size_t>(axis);
    if (seen[a]) return std::nullopt;
    seen[a] = true;
    out[a] = pads->values[k];
    out[a + *rank] = pads->values[k + listed];
  }
  return out;
}

bool consumer_accepts_pads(const ir::node& n) {
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  if (n.is("Conv")) return true;
  return n.is("AveragePool") && n.attr_int("count_include_pad", 0) == 1 && n.attr_int("ceil_mode", 0) == 0;
}

std::optional<pad_match> find_match(const pass_context& ctx, ir::node* pad) {
  if (pad->is_dead() || !pad->is("Pad") || pad->outputs().size() != 1 || !pad->input(0) || !pad->output(0)) {
    return std::nullopt;
  }
  const bool from_attribute = ctx.onnx_opset() < 11;
  if (pad->attr_string("mode", "constant") != "constant" || !pads_with_zero(ctx, *pad, from_attribute)) {
    return std::nullopt;
  }
  const std::optional<ints> pads = full_pads(ctx, *pad, from_attribute);
  if (!pads || pads->size() < 6) return std::nullopt;  // a spatial axis needs rank >= 3
  const std::size_t rank = pads->size() / 2;
  if (std::any_of(pads->begin(), pads->end(), [](std::int64_t p) { return p < 0; })) return std::nullopt;
  if ((*pads)[0] || (*pads)[1] || (*pads)[rank] || (*pads)[rank + 1]) return std::nullopt;

  ir::node* consumer = ir::sole_user(pad->output(0));
  if (!consumer || consumer->input(0) != pad->output(0) || !consumer_accepts_pads(*consumer)) return std::nullopt;
  const std::size_t spatial = rank - 2;
  ints conv_pads = consumer->attr_ints("pads", ints(2 * spatial, 0));
  if (conv_pads.size() != 2 * spatial) return std::nullopt;
  for (std::size_t k = 0; k < spatial; ++k) {
    conv_pads[k] += (*pads)[k + 2];
    conv_pads[k + spatial] += (*pads)[rank + k + 2];
  }
  return pad_match{pad, consumer, std::move(conv_pads)};
}

class pad_into_conv_pattern final : public pattern<pad_match> {
 public:
  pad_into_conv_pattern() : pattern("fuse-pad-into-conv", pattern_root{{"Pad"}}) {}

  match_result<pad_match> match(const ir::graph&, ir::node& pad, const pass_context& ctx) const override {
    std::optional<pad_match> m = find_match(ctx, &pad);
    if (!m) return {};
    return std::move(*m);
  }

  std::int64_t rewrite(ir::graph& g, const pad_match& m, pass_context& ctx) const override {
    m.consumer->set_attribute(ir::attribute::make_ints("pads", m.new_pads));
    g.set_input(m.consumer, 0, m.pad->input(0));
    g.erase(m.pad);
    ctx.count(m.consumer->is("Conv") ? "pads-into-conv" : "pads-into-average-pool");
    return 1;
  }
};

}  // namespace

fuse_pad_into_conv::fuse_pad_into_conv() : pattern_pass(make_patterns<pad_into_conv_pattern>()) {}

}  // namespace inferopt
