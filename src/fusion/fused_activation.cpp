#include "fused_activation.hpp"

#include <cmath>
#include <limits>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::fusion::detail {
namespace {

/// A Clip bound given as input `index` (opset >= 11): absent keeps `fallback`; otherwise it
/// must be a constant scalar. False when it is neither.
bool clip_bound(const pass_context& ctx, const ir::node* n, std::size_t index, float& bound) {
  const ir::value* v = n->input(index);
  if (!v) return true;
  const std::optional<std::vector<double>> values = ir::constant_floats(v, ctx.ir_version());
  if (!values || values->size() != 1) return false;
  bound = static_cast<float>((*values)[0]);
  return true;
}

}  // namespace

std::optional<fused_activation> match_fused_activation(const pass_context& ctx, const ir::node* n) {
  if (!n || !n->is_onnx_domain() || n->outputs().size() != 1 || !n->output(0) || n->inputs().empty() || !n->input(0)) {
    return std::nullopt;
  }
  const std::string& op = n->op_type();
  std::optional<fused_activation> found;
  if (op == "Relu" || op == "Tanh" || op == "Sigmoid") {
    found = fused_activation{op, {}};
  } else if (op == "HardSwish") {
    found = fused_activation{op, {}};
  } else if (op == "LeakyRelu") {
    found = fused_activation{op, {n->attr_float("alpha", 0.01f)}};
  } else if (op == "HardSigmoid") {
    found = fused_activation{op, {n->attr_float("alpha", 0.2f), n->attr_float("beta", 0.5f)}};
  } else if (op == "Clip") {
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    if (ctx.onnx_opset() < 11) {
      // Clip-6 carries its bounds as attributes and has one input.
      if (n->inputs().size() != 1) return std::nullopt;
      lo = n->attr_float("min", lo);
      hi = n->attr_float("max", hi);
    } else if (n->inputs().size() > 3 || !clip_bound(ctx, n, 1, lo) || !clip_bound(ctx, n, 2, hi)) {
      return std::nullopt;
    }
    // min > max has no agreed meaning across runtimes; leave such a Clip alone.
    if (!(lo <= hi)) return std::nullopt;
    found = fused_activation{op, {lo, hi}};
  } else {
    return std::nullopt;
  }
  // Only Clip takes extra inputs.
  if (op != "Clip" && n->inputs().size() != 1) return std::nullopt;
  for (float p : found->params) {
    if (!std::isfinite(p)) return std::nullopt;
  }
  return found;
}

bool microsoft_opset_usable(const pass_context& ctx) {
  const std::optional<std::int64_t> version = ctx.model().opset(microsoft_domain);
  return !version || *version == microsoft_opset;
}

}  // namespace inferopt::fusion::detail
