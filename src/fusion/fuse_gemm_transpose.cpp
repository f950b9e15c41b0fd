#include "inferopt/fusion/fuse_gemm_transpose.hpp"

#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

const char* const trans_flag[2] = {"transA", "transB"};

/// The matrix Transpose producing `v`, or null.
ir::node* transpose_producing(const ir::value* v) {
  ir::node* p = v ? v->producer() : nullptr;
  return ir::is_matrix_transpose(p) ? p : nullptr;
}

void toggle(ir::node* gemm, std::size_t slot) {
  gemm->set_attribute(ir::attribute::make_int(trans_flag[slot], gemm->attr_int(trans_flag[slot], 0) != 0 ? 0 : 1));
}

/// (a) Points Gemm slots read through matrix Transposes at the Transposes' inputs; returns how
/// many it absorbed.
std::int64_t absorb_input_transposes(ir::graph& g, ir::node* gemm) {
  std::int64_t absorbed = 0;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    while (ir::node* t = transpose_producing(gemm->input(slot))) {
      g.set_input(gemm, slot, t->input(0));
      toggle(gemm, slot);
      ir::erase_if_unread(g, t);
      ++absorbed;
    }
  }
  return absorbed;
}

/// A Gemm with A, B and at most C, and one output: the form (a) and (b) rewrite.
bool is_plain_gemm(const ir::node& n) {
  return n.inputs().size() >= 2 && n.inputs().size() <= 3 && n.outputs().size() == 1 && n.input(0) && n.input(1) &&
         n.output(0);
}

/// The Gemm's C as it must be after transposing the output, or why it cannot be.
struct transposed_bias {
  bool keep = true;                ///< absent, or a single element: C^T is C
  std::optional<ir::tensor> value;  ///< a new constant otherwise
  const char* declined = nullptr;
};

transposed_bias transpose_bias(const pass_context& ctx, const ir::node* gemm) {
  transposed_bias out;
  const ir::value* c = gemm->input(2);
  if (!c) return out;
  const std::optional<std::vector<std::int64_t>> dims = ir::static_dims(c);
  if (dims && dims->size() <= 2 && ir::tensor::element_count(*dims) == 1) return out;
  const ir::tensor* t = ir::constant_tensor(c, ctx.ir_version());
  std::optional<std::vector<double>> values = ir::constant_floats(c, ctx.ir_version());
  if (!t || !values || t->dims.size() > 2) {
    out.declined = "declined-bias";
    return out;
  }
  // Seen as [rows, cols] (a 1-D C is one row); the transpose is [cols, rows].
  const std::size_t rows = t->dims.size() == 2 ? static_cast<std::size_t>(t->dims[0]) : 1;
  const std::size_t cols = t->dims.empty() ? 1 : static_cast<std::size_t>(t->dims.back());
  std::vector<double> flipped(values->size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < cols; ++k) flipped[k * rows + r] = (*values)[r * cols + k];
  }
  out.keep = false;
  out.value = ir::floats_as(*t, {static_cast<std::int64_t>(cols), static_cast<std::int64_t>(rows)}, flipped);
  return out;
}

/// (b) A matrix Transpose reading the Gemm's output, to fold into the Gemm.
struct output_transpose {
  ir::node* gemm = nullptr;
  ir::node* transpose = nullptr;
  transposed_bias bias;
};

/// (c) A MatMul of matrices with a matrix Transpose operand, to become a Gemm.
struct matmul_conversion {
  ir::node* matmul = nullptr;
};

class matmul_to_gemm_pattern final : public pattern<matmul_conversion> {
 public:
  matmul_to_gemm_pattern()
      : pattern("fuse-gemm-transpose-matmul", pattern_root{{"MatMul"}}, 1, {"matmuls-became-gemm"}) {}

  match_result<matmul_conversion> match(const ir::graph&, ir::node& matmul, const pass_context& ctx) const override {
    using result = match_result<matmul_conversion>;
    if (matmul.inputs().size() != 2 || matmul.outputs().size() != 1 || !matmul.input(0) || !matmul.input(1)) return {};
    ir::node* transposes[2] = {transpose_producing(matmul.input(0)), transpose_producing(matmul.input(1))};
    if (!transposes[0] && !transposes[1]) return {};
    if (ctx.onnx_opset() < 11) return result::declined("declined-opset");
    for (std::size_t slot = 0; slot < 2; ++slot) {
      if (!transposes[slot] && ir::known_rank(matmul.input(slot)) != std::size_t{2}) {
        return result::declined("declined-rank");
      }
    }
    // A Transpose's output is often untyped; its input has the same element type.
    const auto typed = [&](std::size_t slot) {
      return transposes[slot] ? transposes[slot]->input(0) : matmul.input(slot);
    };
    if (!ir::same_floating_type({typed(0), typed(1), matmul.output(0)})) return result::declined("declined-type");
    return matmul_conversion{&matmul};
  }

  /// The Transposes are absorbed next, as for any Gemm; the conversion itself counts as no
  /// rewrite of its own.
  std::int64_t rewrite(ir::graph&, const matmul_conversion& m, pass_context& ctx) const override {
    m.matmul->set_op_type("Gemm");
    ctx.count("matmuls-became-gemm");
    return 0;
  }
};

class absorb_input_transposes_pattern final : public pattern<ir::node*> {
 public:
  // Before the output fold, as the transposes feeding a Gemm were always absorbed first.
  absorb_input_transposes_pattern()
      : pattern("fuse-gemm-transpose-inputs", pattern_root{{"Gemm"}}, 2, {"transposes-absorbed"}) {}

  match_result<ir::node*> match(const ir::graph&, ir::node& gemm, const pass_context&) const override {
    if (!is_plain_gemm(gemm)) return {};
    if (!transpose_producing(gemm.input(0)) && !transpose_producing(gemm.input(1))) return {};
    return &gemm;
  }

  std::int64_t rewrite(ir::graph& g, ir::node* const& gemm, pass_context& ctx) const override {
    const std::int64_t absorbed = absorb_input_transposes(g, gemm);
    ctx.count("transposes-absorbed", absorbed);
    return absorbed;
  }
};

class fold_output_transpose_pattern final : public pattern<output_transpose> {
 public:
  fold_output_transpose_pattern()
      : pattern("fuse-gemm-transpose-output", pattern_root{{"Gemm"}}, 1, {"output-transposes-folded"}) {}

  match_result<output_transpose> match(const ir::graph& g, ir::node& gemm, const pass_context& ctx) const override {
    using result = match_result<output_transpose>;
    if (!is_plain_gemm(gemm)) return {};
    ir::node* t = ir::sole_user(gemm.output(0));
    if (!ir::is_matrix_transpose(t)) return {};
    if (ctx.onnx_opset() < 7) return result::declined("declined-opset");
    transposed_bias bias = transpose_bias(ctx, &gemm);
    if (bias.declined) return result::declined(bias.declined);
    if (ir::can_bypass(g, t) != ir::bypass_result::removed) return result::declined("declined-output-name");
    return output_transpose{&gemm, t, std::move(bias)};
  }

  std::int64_t rewrite(ir::graph& g, const output_transpose& m, pass_context& ctx) const override {
    ir::node* gemm = m.gemm;
    ir::value* y = gemm->output(0);
    const std::optional<ir::value_type> z_type = m.transpose->output(0)->type();
    std::optional<ir::value_type> y_type = y->type();
    if (y_type && y_type->dims && y_type->dims->size() == 2) std::swap((*y_type->dims)[0], (*y_type->dims)[1]);
    ir::bypass(g, m.transpose);
    ir::value* a = gemm->input(0);
    ir::value* b = gemm->input(1);
    const std::int64_t trans_a = gemm->attr_int("transA", 0) != 0 ? 1 : 0;
    const std::int64_t trans_b = gemm->attr_int("transB", 0) != 0 ? 1 : 0;
    g.set_input(gemm, 0, b);
    g.set_input(gemm, 1, a);
    gemm->set_attribute(ir::attribute::make_int("transA", 1 - trans_b));
    gemm->set_attribute(ir::attribute::make_int("transB", 1 - trans_a));
    if (!m.bias.keep) ir::set_constant_input(g, gemm, 2, *m.bias.value, gemm->input(2)->name());
    y->set_type(z_type ? z_type : y_type);  // Y now holds what Z held: the transposed shape
    ctx.count("output-transposes-folded");
    return 1;
  }
};

}  // namespace

fuse_gemm_transpose::fuse_gemm_transpose()
    : pattern_pass(
          make_patterns<matmul_to_gemm_pattern, absorb_input_transposes_pattern, fold_output_transpose_pattern>()) {}

}  // namespace inferopt
