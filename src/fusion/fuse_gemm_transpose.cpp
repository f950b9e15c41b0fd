#include "inferopt/fusion/fuse_gemm_transpose.hpp"

#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

const char* const trans_flag[2] = {"transA", "transB"};

/// The matrix Transpose producing `v`, or null.
ir::node* transpose_producing(const pass_context& ctx, const ir::value* v) {
  ir::node* p = v ? v->producer() : nullptr;
  return ir::is_matrix_transpose(p) ? p : nullptr;
}

void erase_if_unread(ir::graph& g, ir::node* transpose) {
  const ir::value* out = transpose->output(0);
  if (!out->has_uses() && !out->is_graph_output()) g.erase(transpose);
}

void toggle(ir::node* gemm, std::size_t slot) {
  gemm->set_attribute(ir::attribute::make_int(trans_flag[slot], gemm->attr_int(trans_flag[slot], 0) != 0 ? 0 : 1));
}

/// (a) Points Gemm slots read through matrix Transposes at the Transposes' inputs.
std::int64_t absorb_input_transposes(ir::graph& g, const pass_context& ctx, ir::node* gemm) {
  std::int64_t absorbed = 0;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    while (ir::node* t = transpose_producing(ctx, gemm->input(slot))) {
      g.set_input(gemm, slot, t->input(0));
      toggle(gemm, slot);
      erase_if_unread(g, t);
      ++absorbed;
    }
  }
  return absorbed;
}

/// (c) Turns a MatMul with a matrix Transpose operand into a Gemm; the statistic naming why
/// it declined, or null (also when there is nothing to do).
const char* matmul_to_gemm(ir::graph& g, const pass_context& ctx, ir::node* matmul, bool& converted) {
  converted = false;
  if (matmul->inputs().size() != 2 || matmul->outputs().size() != 1 || !matmul->input(0) || !matmul->input(1)) {
    return nullptr;
  }
  ir::node* transposes[2] = {transpose_producing(ctx, matmul->input(0)), transpose_producing(ctx, matmul->input(1))};
  if (!transposes[0] && !transposes[1]) return nullptr;
  if (ctx.onnx_opset() < 11) return "declined-opset";
  for (std::size_t slot = 0; slot < 2; ++slot) {
    if (!transposes[slot] && ir::known_rank(matmul->input(slot)) != std::size_t{2}) return "declined-rank";
  }
  // A Transpose's output is often untyped; its input has the same element type.
  const auto typed = [&](std::size_t slot) { return transposes[slot] ? transposes[slot]->input(0) : matmul->input(slot); };
  if (!ir::same_floating_type({typed(0), typed(1), matmul->output(0)})) return "declined-type";
  matmul->set_op_type("Gemm");
  converted = true;
  return nullptr;  // the caller absorbs the Transposes as for any Gemm
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

/// (b) Folds a matrix Transpose reading the Gemm's output into the Gemm; the statistic naming
/// why it declined, or null. `folded` says whether it did.
const char* fold_output_transpose(ir::graph& g, const pass_context& ctx, ir::node* gemm, bool& folded) {
  folded = false;
  ir::value* y = gemm->output(0);
  ir::node* t = ir::sole_user(y);
  if (!ir::is_matrix_transpose(t)) return nullptr;
  if (ctx.onnx_opset() < 7) return "declined-opset";
  transposed_bias bias = transpose_bias(ctx, gemm);
  if (bias.declined) return bias.declined;
  const std::optional<ir::value_type> z_type = t->output(0)->type();
  std::optional<ir::value_type> y_type = y->type();
  if (y_type && y_type->dims && y_type->dims->size() == 2) std::swap((*y_type->dims)[0], (*y_type->dims)[1]);
  if (ir::bypass(g, t) != ir::bypass_result::removed) return "declined-output-name";

  ir::value* a = gemm->input(0);
  ir::value* b = gemm->input(1);
  const std::int64_t trans_a = gemm->attr_int("transA", 0) != 0 ? 1 : 0;
  const std::int64_t trans_b = gemm->attr_int("transB", 0) != 0 ? 1 : 0;
  g.set_input(gemm, 0, b);
  g.set_input(gemm, 1, a);
  gemm->set_attribute(ir::attribute::make_int("transA", 1 - trans_b));
  gemm->set_attribute(ir::attribute::make_int("transB", 1 - trans_a));
  if (!bias.keep) ir::set_constant_input(g, gemm, 2, std::move(*bias.value), gemm->input(2)->name());
  y->set_type(z_type ? z_type : y_type);  // Y now holds what Z held: the transposed shape
  folded = true;
  return nullptr;
}

}  // namespace

bool fuse_gemm_transpose::run(ir::graph& g, pass_context& ctx) {
  std::int64_t absorbed = 0, converted = 0, folded = 0;
  for (ir::node* n : g.node_list()) {
    if (n->is_dead()) continue;
    if (n->is("MatMul")) {
      bool did = false;
      if (const char* reason = matmul_to_gemm(g, ctx, n, did)) ctx.count(reason);
      converted += did ? 1 : 0;
    }
    if (!n->is("Gemm") || n->inputs().size() < 2 || n->inputs().size() > 3 || n->outputs().size() != 1 ||
        !n->input(0) || !n->input(1) || !n->output(0)) {
      continue;
    }
    absorbed += absorb_input_transposes(g, ctx, n);
    bool did = false;
    if (const char* reason = fold_output_transpose(g, ctx, n, did)) ctx.count(reason);
    folded += did ? 1 : 0;
  }
  ctx.rewrote(absorbed + folded);
  ctx.count("transposes-absorbed", absorbed);
  ctx.count("matmuls-became-gemm", converted);
  ctx.count("output-transposes-folded", folded);
  return absorbed + folded + converted > 0;
}

}  // namespace inferopt
