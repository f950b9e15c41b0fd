#include "inferopt/fusion/fuse_layer_norm.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "two_way_option.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

struct layer_norm_match {
  ir::value* x = nullptr;
  ir::value* gamma = nullptr;  ///< null: ones
  ir::value* beta = nullptr;
  bool rms = false;
  std::int64_t axis = 0;
  double epsilon = 0;
  std::vector<std::int64_t> normalized;  ///< the dims from `axis` on
  ir::node* square = nullptr;  ///< Pow(d, 2) or Mul(d, d)
  std::vector<ir::node*> erased;
  ir::node* last = nullptr;
};

using decline = const char*;

bool is_op(const ir::node* n, const char* op, std::size_t inputs) {
  return n && n->is_onnx_domain() && n->is(op) && n->inputs().size() == inputs && n->outputs().size() == 1 && n->output(0);
}

/// The other operand of binary `n` when one of them is `known`; else null.
ir::value* other_operand(const ir::node* n, const ir::value* known) {
  if (n->input(0) == known) return n->input(1);
  if (n->input(1) == known) return n->input(0);
  return nullptr;
}

/// The one-element constant `v` holds, if any.
std::optional<double> scalar(const pass_context& ctx, const ir::value* v) {
  const auto c = ir::constant_floats(v, ctx.ir_version());
  if (!c || c->size() != 1) return std::nullopt;
  return (*c)[0];
}

/// The first reduced axis of a ReduceMean over trailing axes with keepdims, of an input of
/// rank `rank`; nullopt when it reduces anything else.
std::optional<std::int64_t> trailing_axis(const pass_context& ctx, const ir::node& reduce, std::int64_t rank) {
  if (!reduce.is("ReduceMean") || !reduce.is_onnx_domain() || reduce.attr_int("keepdims", 1) != 1) return std::nullopt;
  const std::optional<std::vector<std::int64_t>> axes = ctx.onnx_opset() >= 18
      ? (reduce.inputs().size() == 2 ? ir::constant_ints(reduce.input(1), ctx.ir_version()) : std::nullopt)
      : std::optional(reduce.attr_ints("axes", {}));
  if (!axes || axes->empty()) return std::nullopt;
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : *axes) {
    const std::int64_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank || reduced[static_cast<std::size_t>(k)]) return std::nullopt;
    reduced[static_cast<std::size_t>(k)] = true;
  }
  const auto first = static_cast<std::int64_t>(rank - static_cast<std::int64_t>(axes->size()));
  for (std::int64_t k = first; k < rank; ++k) {
    if (!reduced[static_cast<std::size_t>(k)]) return std::nullopt;
  }
  return first;
}

/// Pow(t, 2) or Mul(t, t): t, else null.
ir::value* squared(const pass_context& ctx, const ir::node* n) {
  if (is_op(n, "Pow", 2) && scalar(ctx, n->input(1)) == 2.0) return n->input(0);
  if (is_op(n, "Mul", 2) && n->input(0) == n->input(1)) return n->input(0);
  return nullptr;
}

/// Whether every reader of `v` is one of `readers` and `v` is not a graph output.
bool read_only_by(const ir::value* v, std::initializer_list<const ir::node*> readers) {
  if (!v || v->is_graph_output()) return false;
  for (const ir::use& u : v->uses()) {
    if (std::find(readers.begin(), readers.end(), u.user) == readers.end()) return false;
  }
  return v->has_uses();
}

/// What the variance squares: Sub(x, ReduceMean(x)) for a LayerNorm, x itself for an RMSNorm;
/// then the reduced axes, the same for both reductions and trailing, with static dims.
decline read_axes(const pass_context& ctx, const ir::node& var, ir::value* centered, layer_norm_match& m) {
  ir::node* sub = centered->producer();
  ir::node* mean = is_op(sub, "Sub", 2) ? sub->input(1)->producer() : nullptr;
  m.rms = !(mean && mean->is("ReduceMean") && mean->input(0) == sub->input(0) && read_only_by(mean->output(0), {sub}));
  m.x = m.rms ? centered : sub->input(0);
  const ir::shape* dims = m.x->type() && m.x->type()->dims ? &*m.x->type()->dims : nullptr;
  if (!dims || dims->empty()) return "declined-shape";
  const auto rank = static_cast<std::int64_t>(dims->size());
  const std::optional<std::int64_t> axis = trailing_axis(ctx, var, rank);
  if (!axis || (!m.rms && trailing_axis(ctx, *mean, rank) != axis)) return "declined-axes";
  m.axis = *axis;
  for (std::int64_t k = m.axis; k < rank; ++k) {
    if (!(*dims)[static_cast<std::size_t>(k)].is_static()) return "declined-shape";
    m.normalized.push_back((*dims)[static_cast<std::size_t>(k)].value());
  }
  if (!m.rms) m.erased.insert(m.erased.begin(), {mean, sub});
  return nullptr;
}

/// Back from Sqrt(Add(v, eps)): eps, the variance reduction and what it squares (x or x - mean).
decline read_statistics(const pass_context& ctx, ir::node& sqrt, layer_norm_match& m, ir::value*& centered) {
  ir::node* add = sqrt.input(0)->producer();
  if (!is_op(add, "Add", 2) || !read_only_by(add->output(0), {&sqrt})) return "declined-pattern";
  ir::node* var = nullptr;
  for (std::size_t i = 0; i < 2 && !var; ++i) {
    const auto eps = scalar(ctx, add->input(1 - i));
    ir::node* p = add->input(i)->producer();
    if (eps && p && p->is("ReduceMean")) {
      var = p;
      m.epsilon = *eps;
    }
  }
  if (!var || !read_only_by(var->output(0), {add})) return "declined-pattern";
  if (!std::isfinite(m.epsilon) || m.epsilon < 0) return "declined-epsilon";
  ir::node* square = var->input(0)->producer();
  centered = is_op(square, "Pow", 2) || is_op(square, "Mul", 2) ? squared(ctx, square) : nullptr;
  if (!centered || !read_only_by(square->output(0), {var})) return "declined-pattern";
  m.square = square;
  m.erased.insert(m.erased.end(), {square, var, add});
  return read_axes(ctx, *var, centered, m);
}

/// Whether constant `v` has the normalized dims (leading 1s aside).
bool fits_normalized(const pass_context& ctx, const ir::value* v, const layer_norm_match& m) {
  const ir::tensor* t = ir::constant_tensor(v, ctx.ir_version());
  if (!t || t->dtype != m.x->elem_type()) return false;
  std::vector<std::int64_t> dims = t->dims;
  while (dims.size() > m.normalized.size() && dims.front() == 1) dims.erase(dims.begin());
  return dims == m.normalized;
}

/// Forward from the Sqrt: the division by the deviation and the affine part.
decline read_normalization(const pass_context& ctx, ir::node& sqrt, ir::value* centered, layer_norm_match& m) {
  ir::node* next = ir::sole_user(sqrt.output(0));
  ir::node* divide = nullptr;
  m.erased.push_back(&sqrt);  // producers before readers: erased from the back
  if (is_op(next, "Div", 2) && next->input(0) == centered && next->input(1) == sqrt.output(0)) {
    divide = next;
  } else if (is_op(next, "Reciprocal", 1) ||  // or Div(1, sd): torch.rsqrt in TorchScript exports
             (is_op(next, "Div", 2) && next->input(1) == sqrt.output(0) && scalar(ctx, next->input(0)) == 1.0)) {
    ir::node* mul = ir::sole_user(next->output(0));
    if (is_op(mul, "Mul", 2) && other_operand(mul, next->output(0)) == centered) {
      m.erased.push_back(next);
      divide = mul;
    }
  }
  if (!divide) return "declined-pattern";
  // x - mean feeds the square and the division, nothing else (x itself may feed anything).
  if (!m.rms && !read_only_by(centered, {m.square, divide})) return "declined-extra-reader";
  m.erased.push_back(divide);
  m.last = divide;
  ir::node* scale = ir::sole_user(divide->output(0));
  if (is_op(scale, "Mul", 2) && fits_normalized(ctx, other_operand(scale, divide->output(0)), m)) {
    m.gamma = other_operand(scale, divide->output(0));
    m.erased.push_back(scale);
    m.last = scale;
  }
  ir::node* shift = m.rms ? nullptr : ir::sole_user(m.last->output(0));
  if (is_op(shift, "Add", 2) && fits_normalized(ctx, other_operand(shift, m.last->output(0)), m)) {
    m.beta = other_operand(shift, m.last->output(0));
    m.erased.push_back(shift);
    m.last = shift;
  }
  return nullptr;
}

/// The op a match becomes, or null when the model's opset has none (condition 5).
const char* target_op(const pass_context& ctx, const layer_norm_fusion_options& options, bool rms) {
  if (!rms) return ctx.onnx_opset() >= 17 ? "LayerNormalization" : nullptr;
  if (ctx.onnx_opset() >= 23) return "RMSNormalization";
  return options.allow_runtime_ops ? "SimplifiedLayerNormalization" : nullptr;
}

match_result<layer_norm_match> find_match(const pass_context& ctx, const layer_norm_fusion_options& options, ir::node& sqrt) {
  using result = match_result<layer_norm_match>;
  if (!is_op(&sqrt, "Sqrt", 1)) return {};
  layer_norm_match m;
  ir::value* centered = nullptr;
  if (decline why = read_statistics(ctx, sqrt, m, centered)) {
    return std::string_view(why) == "declined-pattern" ? result{} : result::declined(why);
  }
  if (decline why = read_normalization(ctx, sqrt, centered, m)) {
    return std::string_view(why) == "declined-pattern" ? result{} : result::declined(why);
  }
  if (m.x->elem_type() != ir::data_type::float32 && m.x->elem_type() != ir::data_type::float64) {
    return result::declined("declined-type");
  }
  if (!target_op(ctx, options, m.rms)) return result::declined("declined-opset");
  return m;
}

void apply_match(ir::graph& g, pass_context& ctx, const layer_norm_fusion_options& options, const layer_norm_match& m) {
  ir::value* gamma = m.gamma;
  if (!gamma) {
    std::int64_t n = 1;
    for (std::int64_t d : m.normalized) n *= d;
    std::string name = g.unique_name("layer_norm_ones");
    ir::tensor ones = m.x->elem_type() == ir::data_type::float64
                          ? ir::tensor::from_values<double>(name, m.normalized, std::vector<double>(n, 1.0))
                          : ir::tensor::from_values<float>(name, m.normalized, std::vector<float>(n, 1.0f));
    gamma = g.add_initializer(name, std::move(ones));
  }
  ir::node* norm = m.last;
  std::vector<ir::value*> inputs{m.x, gamma};
  if (m.beta) inputs.push_back(m.beta);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i < norm->inputs().size()) g.set_input(norm, i, inputs[i]);
    else g.add_node_input(norm, inputs[i]);
  }
  norm->set_op_type(target_op(ctx, options, m.rms));
  norm->attributes().clear();
  norm->set_attribute(ir::attribute::make_int("axis", m.axis));
  norm->set_attribute(ir::attribute::make_float("epsilon", static_cast<float>(m.epsilon)));
  for (auto it = m.erased.rbegin(); it != m.erased.rend(); ++it) {
    if (*it != norm) ir::erase_if_unread(g, *it);
  }
  ctx.count(m.rms ? "rms-norms-fused" : "layer-norms-fused");
}

class layer_norm_pattern final : public pattern<layer_norm_match> {
 public:
  explicit layer_norm_pattern(std::shared_ptr<const layer_norm_fusion_options> options)
      : pattern("fuse-layer-norm", pattern_root{{"Sqrt"}}, 1, {"layer-norms-fused", "rms-norms-fused"}),
        options_(std::move(options)) {}

  match_result<layer_norm_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, *options_, root);
  }

  std::int64_t rewrite(ir::graph& g, const layer_norm_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, *options_, m);
    return 1;
  }

 private:
  std::shared_ptr<const layer_norm_fusion_options> options_;
};

}  // namespace

fuse_layer_norm::fuse_layer_norm() : fuse_layer_norm(std::make_shared<layer_norm_fusion_options>()) {}

fuse_layer_norm::fuse_layer_norm(std::shared_ptr<layer_norm_fusion_options> options)
    : pattern_pass([&] {
        std::vector<std::unique_ptr<rewrite_pattern>> patterns;
        patterns.push_back(std::make_unique<layer_norm_pattern>(options));
        return patterns;
      }()),
      options_(std::move(options)) {}

namespace {
constexpr fusion::detail::two_way_option fuse_layer_norm_option{"domain", "ai.onnx", "com.microsoft"};
}  // namespace

void fuse_layer_norm::set_option(std::string_view key, std::string_view value) {
  fuse_layer_norm_option.set(name(), key, value, options_->allow_runtime_ops);
}

std::map<std::string, std::string> fuse_layer_norm::options() const { return fuse_layer_norm_option.text(options_->allow_runtime_ops); }

}  // namespace inferopt
