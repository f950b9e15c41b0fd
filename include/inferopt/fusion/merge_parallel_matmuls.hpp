#pragma once
/// `merge-parallel-matmuls`: linear layers that read one activation become one product and a
/// Split, as attention's Q, K and V projections are packed.
///
///   before:  x -> MatMul(W_q) -> q      x -> MatMul(W_k) -> k      x -> MatMul(W_v) -> v
///   after:   x -> MatMul([W_q | W_k | W_v]) -> Split(axis -1, [N_q, N_k, N_v]) -> q, k, v
///
/// Algebra: the columns of x [W_q | W_k | W_v] are those of x W_q, x W_k and x W_v side by
/// side, each computed from the same products in the same order, so the outputs are equal.
/// One wider GEMM is faster than three narrow ones, and one product is what an INT8 backend
/// needs: onnxruntime fuses no QDQ product whose activation's QuantizeLinear feeds several
/// DequantizeLinear (docs/QDQ_RULES.md, rule 14), which left the three projections in float.
///
/// Conditions (each checked; a declined group stays as it is):
///   1. opset >= 13 (Split's sizes as an input), default-domain MatMul;
///   2. at least two MatMuls read the same non-constant value as input 0, each with a
///      constant float32 2-D weight [K, N_i] of one K, and no output of theirs is a graph
///      output (other readers of the value do not matter);
///   3. every weight is read by its MatMul only (the concatenated copy replaces it).
/// The merged MatMul and the Split go where the first MatMul of the group was.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class merge_parallel_matmuls final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "merge-parallel-matmuls"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "merge MatMuls on constant weights that read one activation into one MatMul and a Split";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
