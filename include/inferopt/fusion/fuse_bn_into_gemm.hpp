#pragma once
/// `fuse-bn-into-gemm`: folds a per-column affine step after Gemm or MatMul into the
/// constant weight and a bias.
///
///   before:  A -> Gemm(B, C) -> Y -> BatchNormalization | Mul | Add | Sub | Div (constant) -> Z
///   after:   A -> Gemm(B', C') -> Z
///
///   before:  A -> MatMul(B) -> Y -> Mul | Div (constant) -> Z
///   after:   A -> MatMul(B') -> Z
///
///   before:  A (2-D) -> MatMul(B) -> Y -> BatchNormalization | Mul | Add | Sub | Div -> Z
///   after:   A (2-D) -> Gemm(B', C') -> Z                  (when the step adds a shift)
///
/// Algebra: the step is Z[., n] = s[n] * Y[., n] + t[n] for every column n of Y
/// (BatchNormalization: s = scale / sqrt(var + eps), t = bias - mean * s; Mul: s = c; Div:
/// s = 1 / c; Add: t = c; Sub: t = -c). With Y = alpha * op(A) op(B) + beta * C:
///   Z = alpha * op(A) (op(B) diag(s)) + (beta * C * s + t)
/// so B' scales column n of op(B) by s[n] (row n of B when transB = 1), C' = beta * C * s + t
/// broadcast over the columns (C' has N columns, and as many rows as C had), and beta becomes 1.
/// alpha is left as it is. Folding happens in double; B' and C' are new initializers of B's
/// element type, because B and C may be shared with other nodes.
///
/// Conditions (each checked before anything is edited; a declined match edits nothing):
///   1. Y's only reader is the step, and Y is not a graph output;
///   2. the weight B is a constant floating-point matrix (2-D);
///   3. the step's other operands are constants: Mul/Add/Div/Sub vary only along Y's last
///      axis (every other dim 1, the last 1 or N), add no axis to Y, and share Y's element
///      type; Sub and Div read Y as their first operand; Div's divisor has no zero;
///   4. BatchNormalization is in inference form (training_mode 0 and no used running
///      statistics outputs; is_test 1 before opset 7), Y is 2-D (its axis 1 is the column),
///      each parameter has N entries and var + epsilon is positive, with finite s and t;
///   5. Gemm: opset >= 7 (C broadcasts unidirectionally); C is absent or a constant that
///      broadcasts to [M, N];
///   6. MatMul gaining a shift becomes a Gemm only when A is known to be 2-D and opset >= 7;
///      otherwise only a pure scale (Mul, Div) is folded and a shift-only step stays;
///   7. the step's output can keep its name when it is a graph output (ir::bypass).

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_bn_into_gemm final : public pattern_pass {
 public:
  fuse_bn_into_gemm();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-bn-into-gemm"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fold BatchNormalization or a per-column Mul/Add after Gemm or MatMul into its weights";
  }
};

}  // namespace inferopt
