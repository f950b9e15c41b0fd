#include "inferopt/fusion/fuse_skip_layer_norm.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

struct skip_norm_match {
  ir::node* norm = nullptr;
  ir::node* sum = nullptr;
  ir::node* bias_add = nullptr;  ///< Add(x, bias); null when none
  ir::value* x = nullptr;
  ir::value* skip = nullptr;
  ir::value* bias = nullptr;
  bool simplified = false;  ///< an RMS norm: SkipSimplifiedLayerNormalization, no beta
  bool sum_read_elsewhere = false;
};

std::optional<std::vector<std::int64_t>> known_dims(const ir::value* v) {
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->dims) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const ir::dim& d : *v->type()->dims) out.push_back(d.is_static() ? d.value() : -1);
  return out;
}

bool is_float32(const ir::value* v) { return v && v->elem_type() == ir::data_type::float32; }

/// The norm's operands and outputs (condition 1); D, or 0 when they do not fit.
std::int64_t check_norm(const ir::node& norm, bool simplified) {
  const auto dims = known_dims(norm.input(0));
  if (!dims || dims->size() != 3 || dims->back() <= 0 || !is_float32(norm.input(0))) return 0;
  const std::int64_t axis = norm.attr_int("axis", -1);
  if (axis != -1 && axis != 2) return 0;
  const std::int64_t d = dims->back();
  const std::size_t params = simplified ? 2 : norm.inputs().size();
  if (params < 2 || norm.inputs().size() > 3 || (simplified && norm.inputs().size() != 2)) return 0;
  for (std::size_t i = 1; i < params; ++i) {
    if (norm.input(i) && (!is_float32(norm.input(i)) || known_dims(norm.input(i)) != std::vector<std::int64_t>{d})) return 0;
  }
  for (std::size_t i = 1; i < norm.outputs().size(); ++i) {
    if (norm.output(i) && (norm.output(i)->has_uses() || norm.output(i)->is_graph_output())) return 0;
  }
  return d;
}

/// Whether `skip` broadcasts to x's [B,S,D] as SkipLayerNormalization allows.
bool fits_as_skip(const std::vector<std::int64_t>& x, const std::optional<std::vector<std::int64_t>>& skip) {
  if (!skip || std::find(x.begin(), x.end(), -1) != x.end()) return skip == x;
  return *skip == x || *skip == std::vector<std::int64_t>{1, x[1], x[2]} || *skip == std::vector<std::int64_t>{x[1], x[2]};
}

/// x = Add(y, bias) or Add(bias, y), read only by the sum, with bias a float32 constant [D]:
/// fills the bias and moves x to y.
void take_bias(const pass_context& ctx, std::int64_t d, skip_norm_match& m) {
  ir::node* add = m.x != m.skip && ir::sole_user(m.x) == m.sum ? m.x->producer() : nullptr;
  if (!add || !add->is("Add") || add->inputs().size() != 2 || add->outputs().size() != 1) return;
  for (std::size_t i = 0; i < 2; ++i) {
    const ir::tensor* c = ir::constant_tensor(add->input(1 - i), ctx.ir_version());
    if (c && c->dtype == ir::data_type::float32 && c->dims == std::vector<std::int64_t>{d} &&
        known_dims(add->input(i)) == known_dims(m.x)) {
      m.bias_add = add;
      m.bias = add->input(1 - i);
      m.x = add->input(i);
      return;
    }
  }
}

match_result<skip_norm_match> find_match(const pass_context& ctx, ir::node& norm) {
  using result = match_result<skip_norm_match>;
  skip_norm_match m;
  m.norm = &norm;
  m.simplified = !norm.is("LayerNormalization");
  if (!norm.is_onnx_domain() || norm.outputs().empty() || !norm.output(0)) return {};
  ir::node* sum = norm.input(0) ? norm.input(0)->producer() : nullptr;
  if (!sum || !sum->is("Add") || sum->inputs().size() != 2 || sum->outputs().size() != 1) return {};
  const std::int64_t d = check_norm(norm, m.simplified);
  if (d == 0) return result::declined("declined-norm");
  const std::vector<std::int64_t> out = *known_dims(norm.input(0));
  const ir::value* s = sum->output(0);
  m.sum = sum;
  m.sum_read_elsewhere = ir::sole_user(s) != &norm;
  if (m.sum_read_elsewhere && s->is_graph_output()) return result::declined("declined-output-name");
  for (std::size_t i = 0; i < 2 && !m.x; ++i) {  // condition 2: prefer x with a bias Add
    if (!is_float32(sum->input(i)) || !is_float32(sum->input(1 - i))) return result::declined("declined-type");
    if (known_dims(sum->input(i)) == out && fits_as_skip(out, known_dims(sum->input(1 - i)))) {
      m.x = sum->input(i);
      m.skip = sum->input(1 - i);
      take_bias(ctx, d, m);
      if (!m.bias && i == 0 && known_dims(sum->input(1)) == out) {  // maybe the other side has the bias
        skip_norm_match swapped = m;
        swapped.x = sum->input(1);
        swapped.skip = sum->input(0);
        take_bias(ctx, d, swapped);
        if (swapped.bias) m = swapped;
      }
    }
  }
  if (!m.x) return result::declined("declined-skip-shape");
  if (!fusion::detail::microsoft_opset_usable(ctx)) return result::declined("declined-opset");
  return m;
}

void apply_match(ir::graph& g, pass_context& ctx, const skip_norm_match& m) {
  ir::node* norm = m.norm;
  ir::value* gamma = norm->input(1);
  ir::value* beta = !m.simplified && norm->inputs().size() > 2 ? norm->input(2) : nullptr;
  const float epsilon = norm->attr_float("epsilon", 1e-5f);  // every source op's default
  std::vector<ir::value*> inputs{m.x, m.skip, gamma};
  if (m.simplified) {
    if (m.bias) inputs.push_back(m.bias);
  } else {
    inputs.push_back(beta);
    if (m.bias) inputs.push_back(m.bias);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {  // never fewer than the norm had
    if (i < norm->inputs().size()) g.set_input(norm, i, inputs[i]);
    else g.add_node_input(norm, inputs[i]);
  }
  g.trim_omitted_inputs(norm);  // no beta and no bias
  norm->set_op_type(m.simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization");
  norm->set_domain(fusion::detail::microsoft_domain);
  norm->attributes().clear();
  norm->attributes().push_back(ir::attribute::make_float("epsilon", epsilon));
  if (m.sum_read_elsewhere) {  // output 3 carries the sum on, under its name
    ir::value* s = m.sum->output(0);
    const std::string name = s->name();
    ir::value* carried = g.add_node_output(norm, 3);
    carried->set_type(s->type());
    g.replace_all_uses(s, carried);
    g.erase(m.sum);
    g.rename(carried, name);
  } else {
    g.erase(m.sum);
  }
  if (m.bias_add) g.erase(m.bias_add);
  ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class skip_norm_pattern final : public pattern<skip_norm_match> {
 public:
  skip_norm_pattern()
      : pattern("fuse-skip-layer-norm",
                pattern_root{{"LayerNormalization", "RMSNormalization", "SimplifiedLayerNormalization"}}, 1,
                {"skip-layer-norms-fused"}) {}

  match_result<skip_norm_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, root);
  }

  std::int64_t rewrite(ir::graph& g, const skip_norm_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    ctx.count("skip-layer-norms-fused");
    return 1;
  }
};

}  // namespace

fuse_skip_layer_norm::fuse_skip_layer_norm() : pattern_pass(make_patterns<skip_norm_pattern>()) {}

}  // namespace inferopt
