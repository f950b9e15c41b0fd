#include "inferopt/fusion/fuse_bn_into_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

/// The step as Z[., n] = scale[n] * Y[., n] + shift[n].
struct column_affine {
  std::vector<double> scale;
  std::vector<double> shift;
  std::size_t data_index = 0;  ///< the step's input that reads Y

  [[nodiscard]] bool scales() const {
    return std::any_of(scale.begin(), scale.end(), [](double s) { return s != 1.0; });
  }
  [[nodiscard]] bool shifts() const {
    return std::any_of(shift.begin(), shift.end(), [](double t) { return t != 0.0; });
  }
  [[nodiscard]] bool finite() const {
    const auto ok = [](double x) { return std::isfinite(x); };
    return std::all_of(scale.begin(), scale.end(), ok) && std::all_of(shift.begin(), shift.end(), ok);
  }
};

/// A folding step found after `producer`, or the statistic naming why it was declined.
/// Neither set: the producer's output does not feed a step this pass knows.
struct fold_match {
  ir::node* producer = nullptr;
  ir::node* step = nullptr;
  column_affine affine;
  bool to_gemm = false;  ///< a MatMul that becomes a Gemm to take the shift as C
  const char* declined = nullptr;
};

struct affine_or_reason {
  std::optional<column_affine> affine;
  const char* declined = nullptr;
};

affine_or_reason declined(const char* reason) { return {std::nullopt, reason}; }

/// Condition 4: inference-form BatchNormalization over a 2-D Y with N-entry parameters.
affine_or_reason batch_norm_affine(const pass_context& ctx, const ir::node* bn, const ir::value* y,
                                   std::int64_t columns, std::optional<std::size_t> output_rank) {
  if (bn->inputs().size() != 5 || bn->input(0) != y) return declined("declined-form");
  for (std::size_t k = 1; k < bn->outputs().size(); ++k) {
    const ir::value* statistic = bn->output(k);
    if (statistic && (statistic->has_uses() || statistic->is_graph_output())) return declined("declined-training");
  }
  if (bn->attr_int("training_mode", 0) != 0) return declined("declined-training");
  // Before opset 7, is_test defaulted to 0: batch statistics, not the stored ones.
  if (ctx.onnx_opset() < 7 && bn->attr_int("is_test", 0) != 1) return declined("declined-training");
  if (output_rank != std::size_t{2}) return declined("declined-shape");
  std::vector<std::vector<double>> params;  // scale, bias, mean, var
  for (std::size_t k = 1; k <= 4; ++k) {
    const ir::tensor* t = ir::constant_tensor(bn->input(k), ctx.ir_version());
    std::optional<std::vector<double>> values = ir::constant_floats(bn->input(k), ctx.ir_version());
    if (!t || !values) return declined("declined-not-constant");
    if (t->dims != std::vector<std::int64_t>{columns}) return declined("declined-shape");
    params.push_back(std::move(*values));
  }
  const double epsilon = bn->attr_float("epsilon", 1e-5f);
  column_affine a;
  for (std::size_t n = 0; n < static_cast<std::size_t>(columns); ++n) {
    const double denominator = params[3][n] + epsilon;
    if (!(denominator > 0.0) || !std::isfinite(denominator)) return declined("declined-variance");
    const double s = params[0][n] / std::sqrt(denominator);
    a.scale.push_back(s);
    a.shift.push_back(params[1][n] - params[2][n] * s);
  }
  if (!a.finite()) return declined("declined-variance");
  return {std::move(a), nullptr};
}

/// Condition 3: Mul, Div, Add or Sub by a per-column constant of the weight's type.
affine_or_reason elementwise_affine(const pass_context& ctx, const ir::node* step, const ir::value* y,
                                    const ir::value* weight, std::int64_t columns,
                                    std::optional<std::size_t> output_rank) {
  if (step->inputs().size() != 2) return declined("declined-form");
  column_affine a;
  a.data_index = step->input(0) == y ? 0 : 1;
  if (step->input(a.data_index) != y) return declined("declined-form");
  const bool inverse_op = step->is("Sub") || step->is("Div");
  if (inverse_op && a.data_index != 0) return declined("declined-operand-order");
  const ir::value* c = step->input(1 - a.data_index);
  if (!ir::constant_tensor(c, ctx.ir_version())) return declined("declined-not-constant");
  if (!ir::same_floating_type({y, c, weight})) return declined("declined-type");
  std::optional<std::vector<double>> values = ir::per_column_constant(c, columns, output_rank, ctx.ir_version());
  if (!values) return declined("declined-shape");
  a.scale.assign(values->size(), 1.0);
  a.shift.assign(values->size(), 0.0);
  for (std::size_t n = 0; n < values->size(); ++n) {
    const double v = (*values)[n];
    if (step->is("Mul")) a.scale[n] = v;
    else if (step->is("Add")) a.shift[n] = v;
    else if (step->is("Sub")) a.shift[n] = -v;
    else if (v == 0.0) return declined("declined-zero-divisor");
    else a.scale[n] = 1.0 / v;
  }
  if (!a.finite()) return declined("declined-not-finite");
  return {std::move(a), nullptr};
}

bool is_foldable_step(const ir::node* n) {
  return n && (n->is("BatchNormalization") || n->is("Mul") || n->is("Add") || n->is("Sub") || n->is("Div"));
}

/// Rank of a MatMul's output with a 2-D B: A's rank, at least 1.
std::optional<std::size_t> matmul_output_rank(const pass_context& ctx, const ir::node* matmul) {
  std::optional<std::size_t> rank = ir::known_rank(matmul->input(0));
  if (!rank || *rank == 0) return std::nullopt;
  return rank;
}

fold_match match_at(const pass_context& ctx, ir::node* producer) {
  fold_match m;
  const bool is_gemm = producer->is("Gemm");
  const std::size_t max_inputs = is_gemm ? 3 : 2;
  if (producer->inputs().size() < 2 || producer->inputs().size() > max_inputs || producer->outputs().size() != 1 ||
      !producer->input(0) || !producer->output(0)) {
    return m;
  }
  ir::value* y = producer->output(0);
  ir::node* step = ir::sole_user(y);  // condition 1
  if (!is_foldable_step(step)) return m;
  m.producer = producer;
  m.step = step;

  const ir::tensor* weight = ir::constant_tensor(producer->input(1), ctx.ir_version());  // condition 2
  if (!weight || !ir::is_floating(weight->dtype) || weight->dims.size() != 2) {
    m.declined = "declined-weight-not-constant";
    return m;
  }
  const bool trans_b = is_gemm && producer->attr_int("transB", 0) != 0;
  const std::int64_t columns = trans_b ? weight->dims[0] : weight->dims[1];
  const std::optional<std::size_t> output_rank = is_gemm ? std::optional<std::size_t>(2) : matmul_output_rank(ctx, producer);

  affine_or_reason found = step->is("BatchNormalization")
                               ? batch_norm_affine(ctx, step, y, columns, output_rank)
                               : elementwise_affine(ctx, step, y, producer->input(1), columns, output_rank);
  if (!found.affine) {
    m.declined = found.declined;
    return m;
  }
  m.affine = std::move(*found.affine);

  if (is_gemm) {  // condition 5
    if (ctx.onnx_opset() < 7) {
      m.declined = "declined-opset";
      return m;
    }
    if (const ir::value* c = producer->input(2)) {
      const ir::tensor* bias = ir::constant_tensor(c, ctx.ir_version());
      if (!bias || !ir::is_floating(bias->dtype) || bias->dtype != weight->dtype) {
        m.declined = "declined-bias-not-constant";
        return m;
      }
      const bool trans_a = producer->attr_int("transA", 0) != 0;
      if (!ir::broadcasts_to_matrix(bias->dims, ir::static_dim(producer->input(0), trans_a ? 1 : 0),
                                        columns)) {
        m.declined = "declined-shape";
        return m;
      }
    }
  } else if (m.affine.shifts()) {  // condition 6
    if (ir::known_rank(producer->input(0)) == std::size_t{2} && ctx.onnx_opset() >= 7) {
      m.to_gemm = true;
    } else {
      m.declined = m.affine.scales() ? "declined-opset" : "declined-shift-needs-gemm";
      return m;
    }
  }
  return m;
}

/// C' = beta * C * s + t over N columns (and C's rows); see the header's algebra.
ir::tensor folded_bias(const pass_context& ctx, const ir::node* gemm, const ir::tensor& weight,
                       const column_affine& a) {
  const std::size_t columns = a.scale.size();
  const ir::value* c = gemm->input(2);
  const double beta = gemm->attr_float("beta", 1.0f);
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(columns)};
  std::vector<double> c_values;
  std::size_t c_columns = 1;
  if (c && beta != 0.0) {  // beta = 0: C is never read, whatever it holds
    const ir::tensor& bias = *ir::constant_tensor(c, ctx.ir_version());
    c_values = *ir::constant_floats(c, ctx.ir_version());
    c_columns = bias.dims.empty() ? 1 : static_cast<std::size_t>(bias.dims.back());
    if (bias.dims.size() == 2) dims.insert(dims.begin(), bias.dims.front());
  }
  const std::size_t rows = dims.size() == 2 ? static_cast<std::size_t>(dims.front()) : 1;
  std::vector<double> out(rows * columns);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t n = 0; n < columns; ++n) {
      const double scaled_c =
          c_values.empty() ? 0.0 : beta * c_values[r * c_columns + (c_columns == 1 ? 0 : n)] * a.scale[n];
      out[r * columns + n] = scaled_c + a.shift[n];
    }
  }
  return ir::floats_as(weight, std::move(dims), out);
}

/// Applies a found match; `match` checked that the step's output can keep its name.
void fold_step(ir::graph& g, const pass_context& ctx, const fold_match& m) {
  ir::node* p = m.producer;
  const ir::tensor weight = *ir::constant_tensor(p->input(1), ctx.ir_version());
  const bool is_gemm = p->is("Gemm");
  const ir::value* c = is_gemm ? p->input(2) : nullptr;
  const bool c_is_read = c && p->attr_float("beta", 1.0f) != 0.0f;
  const bool needs_bias = m.affine.shifts() || (m.affine.scales() && c_is_read);
  std::optional<ir::tensor> bias;
  if (is_gemm && needs_bias) bias = folded_bias(ctx, p, weight, m.affine);
  if (m.to_gemm) bias = ir::floats_as(weight, {static_cast<std::int64_t>(m.affine.shift.size())}, m.affine.shift);
  std::optional<ir::tensor> scaled_weight;
  if (m.affine.scales()) {
    std::vector<double> w = *ir::constant_floats(p->input(1), ctx.ir_version());
    const bool trans_b = is_gemm && p->attr_int("transB", 0) != 0;
    const std::size_t cols = static_cast<std::size_t>(weight.dims[1]);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] *= m.affine.scale[trans_b ? i / cols : i % cols];
    scaled_weight = ir::floats_as(weight, weight.dims, w);
  }

  ir::bypass(g, m.step, m.affine.data_index);
  // A weight or bias other nodes read too is replaced by a copy; theirs stays as it was.
  if (scaled_weight) ir::replace_constant_input(g, p, 1, std::move(*scaled_weight));
  if (bias) {
    if (m.to_gemm) p->set_op_type("Gemm");
    if (c) {
      ir::replace_constant_input(g, p, 2, std::move(*bias));
    } else {
      ir::set_constant_input(g, p, 2, std::move(*bias), p->output(0)->name() + "_bias");
    }
    if (is_gemm) p->set_attribute(ir::attribute::make_float("beta", 1.0f));
  }
}

/// A producer may be followed by several steps in a row (Mul then Add): the driver tries it
/// again after each fold.
class bn_into_gemm_pattern final : public pattern<fold_match> {
 public:
  bn_into_gemm_pattern() : pattern("fuse-bn-into-gemm", pattern_root{{"Gemm", "MatMul"}}) {}

  match_result<fold_match> match(const ir::graph& g, ir::node& producer, const pass_context& ctx) const override {
    fold_match m = match_at(ctx, &producer);
    if (!m.step) return {};
    if (m.declined) return match_result<fold_match>::declined(m.declined);
    if (ir::can_bypass(g, m.step, m.affine.data_index) != ir::bypass_result::removed) {
      return match_result<fold_match>::declined("declined-output-name");
    }
    return m;
  }

  std::int64_t rewrite(ir::graph& g, const fold_match& m, pass_context& ctx) const override {
    const bool is_batch_norm = m.step->is("BatchNormalization");  // before the bypass erases it
    fold_step(g, ctx, m);
    ctx.count(is_batch_norm ? "batch-norms-folded" : "elementwise-folded");
    if (m.to_gemm) ctx.count("matmuls-became-gemm");
    return 1;
  }
};

}  // namespace

fuse_bn_into_gemm::fuse_bn_into_gemm() : pattern_pass(make_patterns<bn_into_gemm_pattern>()) {}

}  // namespace inferopt
