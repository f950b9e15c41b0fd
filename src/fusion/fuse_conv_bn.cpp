#include "inferopt/fusion/fuse_conv_bn.hpp"

#include <cmath>
#include <optional>
#include <string_view>

#include "conv_weights.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

/// A BatchNormalization found after a conv, and the conv's folded weights. Building it edits
/// nothing.
struct bn_match {
  ir::node* bn = nullptr;
  fusion::detail::conv_weights folded;
};

match_result<bn_match> decline(std::string_view why) { return match_result<bn_match>::declined(why); }

/// Whether output `k` of `n` is absent or read by nobody.
bool unused_output(const ir::node* n, std::size_t k) {
  const ir::value* v = n->output(k);
  return !v || (!v->has_uses() && !v->is_graph_output());
}

/// Condition 4: the inference form in the model's opset.
bool is_inference_form(const ir::node* bn, std::int64_t opset) {
  for (std::size_t k = 1; k < bn->outputs().size(); ++k) {
    if (!unused_output(bn, k)) return false;
  }
  if (opset >= 14 && bn->attr_int("training_mode", 0) != 0) return false;
  if (opset <= 8 && bn->attr_int("spatial", 1) == 0) return false;
  return true;
}

/// Condition 3: one constant floating rank-1 vector of `channels` values.
std::optional<std::vector<double>> channel_vector(const pass_context& ctx, const ir::value* v, std::int64_t channels) {
  const ir::tensor* t = ir::constant_tensor(v, ctx.ir_version());
  if (!t || !ir::is_floating(t->dtype) || t->dims.size() != 1 || t->dims[0] != channels) return std::nullopt;
  return ir::constant_floats(v, ctx.ir_version());
}

match_result<bn_match> find_match(const ir::graph& g, const pass_context& ctx, ir::node* conv) {
  // Condition 2 before 1: both fail silently, and reading the weights (widened to double) is
  // the expensive part, wasted on the many convs no BatchNormalization follows.
  ir::node* bn = ir::sole_user(conv->output(0));  // condition 2
  if (!bn || !bn->is("BatchNormalization")) return {};
  std::optional<fusion::detail::conv_weights> c = fusion::detail::open_conv_weights(ctx, conv);  // condition 1
  if (!c) return {};
  if (bn->inputs().size() != 5 || bn->input(0) != conv->output(0) || bn->outputs().empty() || !bn->output(0)) {
    return decline("declined-malformed");
  }
  std::optional<std::vector<double>> p[4];
  for (std::size_t i = 0; i < 4; ++i) {
    p[i] = channel_vector(ctx, bn->input(i + 1), c->out_channels);
    if (!p[i]) return decline("declined-parameters");
  }
  if (!is_inference_form(bn, ctx.onnx_opset())) return decline("declined-training-form");

  const std::vector<double>& gamma = *p[0];
  const std::vector<double>& beta = *p[1];
  const std::vector<double>& mean = *p[2];
  const std::vector<double>& var = *p[3];
  const double epsilon = bn->attr_float("epsilon", 1e-5f);
  std::vector<double> scale(gamma.size()), shift(gamma.size());
  for (std::size_t o = 0; o < gamma.size(); ++o) {
    const double denominator = var[o] + epsilon;  // condition 5
    if (!(denominator > 0.0) || !std::isfinite(denominator)) return decline("declined-variance");
    scale[o] = gamma[o] / std::sqrt(denominator);
    shift[o] = beta[o] - mean[o] * scale[o];  // (B - mean) * s + beta = B * s + shift
  }
  fusion::detail::load_weights(ctx, *c);
  fusion::detail::scale_output_channels(*c, scale);
  fusion::detail::shift_output_channels(*c, shift);
  if (!fusion::detail::fits_weight_type(*c)) return decline("declined-overflow");
  if (ir::can_bypass(g, bn) != ir::bypass_result::removed) return decline("declined-output-name");  // 6
  return bn_match{bn, std::move(*c)};
}

/// A chain of BatchNormalizations folds one per rewrite: the driver tries the conv again.
class conv_bn_pattern final : public pattern<bn_match> {
 public:
  conv_bn_pattern() : pattern("fuse-conv-bn", pattern_root{{"Conv", "ConvTranspose"}}, 1, {"batch-norms-folded"}) {}

  match_result<bn_match> match(const ir::graph& g, ir::node& conv, const pass_context& ctx) const override {
    return find_match(g, ctx, &conv);
  }

  std::int64_t rewrite(ir::graph& g, const bn_match& m, pass_context& ctx) const override {
    ir::bypass(g, m.bn);
    fusion::detail::commit(g, m.folded);
    ctx.count("batch-norms-folded");
    return 1;
  }
};

}  // namespace

fuse_conv_bn::fuse_conv_bn() : pattern_pass(make_patterns<conv_bn_pattern>()) {}

}  // namespace inferopt
