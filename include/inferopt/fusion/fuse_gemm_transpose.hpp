#pragma once
/// `fuse-gemm-transpose`: matrix transposes around Gemm become its transA/transB flags.
///
///   (a) before:  X -> Transpose([1,0]) -> Gemm(A or B slot)      after:  X -> Gemm(transA/transB toggled)
///   (b) before:  Gemm(A, B, C) -> Y -> Transpose([1,0]) -> Z     after:  Gemm(B, A, C^T) -> Z
///   (c) before:  X -> Transpose([1,0]) -> MatMul(A or B slot)    after:  X -> Gemm(transA or transB = 1)
///
/// Algebra: op(A) with transA toggled reads A^T, so a transpose feeding a slot is the flag
/// flipped. (b): (alpha op(A) op(B) + beta C)^T = alpha op(B)^T op(A)^T + beta C^T, a Gemm
/// with the operands swapped, transA' = !transB, transB' = !transA, and C transposed (a C of
/// shape [k] broadcasts as [1, k], so its transpose is [k, 1]). (c): a MatMul of matrices is
/// Gemm with alpha 1 and no C.
///
/// Conditions (each checked before anything is edited; a declined match edits nothing):
///   1. the Transpose is default-domain and swaps the two axes of a matrix (perm [1,0], or no
///      perm on an input known to be 2-D);
///   2. (a) none: a Transpose with other readers stays for them, one left unread is removed;
///   3. (b) opset >= 7 (C broadcasts unidirectionally); the Gemm's output is read only by the
///      Transpose and is not a graph output; C is absent, holds a single element (its
///      transpose is itself), or is a constant (transposed into a new initializer); the
///      Transpose's output can keep its name when it is a graph output (ir::bypass);
///   4. (c) opset >= 11 (Gemm without C); the MatMul's other operand is known to be 2-D; the
///      operands share a floating element type.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_gemm_transpose final : public pattern_pass {
 public:
  fuse_gemm_transpose();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-gemm-transpose"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "absorb matrix Transposes around Gemm and MatMul into Gemm's transA/transB";
  }
};

}  // namespace inferopt
