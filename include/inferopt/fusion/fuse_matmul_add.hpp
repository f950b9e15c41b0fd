#pragma once
/// `fuse-matmul-add`: a MatMul of two matrices followed by an Add becomes one Gemm.
///
///   before:  A, B -> MatMul -> Y -> Add(Y, C) or Add(C, Y) -> Z
///   after:   A, B, C -> Gemm -> Z            (alpha = beta = 1, no transposes)
///
/// Algebra: Gemm computes alpha * A B + beta * C with C broadcast to [M, N]; with alpha and
/// beta 1 that is MatMul then Add whenever C broadcasts to [M, N] without widening it.
///
/// Conditions (each checked before anything is edited; a declined match edits nothing):
///   1. opset >= 7: Gemm's C broadcasts unidirectionally only from opset 7 on;
///   2. Y's only reader is the Add, and Y is not a graph output;
///   3. A and B are known to be 2-D (from their types or constant dims); or A is batched
///      ([d0, ..., K], every dim known, rank >= 3) and B is 2-D with N known: then
///        A -> Reshape [M, K] -> Gemm(B, C) -> Reshape [d0, ..., N] -> Z     (M = d0 * ...)
///      with C a per-column bias (all dims 1 but the last; a constant when rank > 2), and
///      opset >= 5 for Reshape's shape input. 1-D MatMul has no Gemm form;
///   4. A, B and C share one floating element type (Gemm before opset 11 is floating only,
///      and our executor's Gemm too);
///   5. C's shape is known and broadcasts to [M, N] unidirectionally: rank at most 2, each
///      dim 1 or the matching, statically known, output dim;
///   6. the Add's output can keep its name when it is a graph output (ir::bypass).
///
/// The option `batched=false` keeps the batched form out (condition 3 then needs 2-D A): -O3
/// sets it until the transformer fusions have run, since the Reshapes it adds around a
/// projection merge with an attention head split and hide it; they run it after.
///
/// C need not be a constant. When it is computed after the MatMul, the Gemm moves after it
/// (the graph is sorted again).

#include <memory>

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

struct matmul_add_fusion_options {
  bool batched = true;  ///< the Reshape-Gemm-Reshape form for a batched A
};

class fuse_matmul_add final : public pattern_pass {
 public:
  fuse_matmul_add();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-matmul-add"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse a 2-D MatMul and the Add of a broadcastable bias into Gemm";
  }
  /// `batched=true` (the default) or `batched=false`.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

 private:
  explicit fuse_matmul_add(std::shared_ptr<matmul_add_fusion_options> options);
  std::shared_ptr<matmul_add_fusion_options> options_;
};

}  // namespace inferopt
