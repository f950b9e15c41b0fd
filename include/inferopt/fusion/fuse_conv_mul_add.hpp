#pragma once
/// `fuse-conv-mul-add`: folds a per-output-channel (or scalar) constant Mul, Add, Sub or Div
/// after a Conv or ConvTranspose into the conv's weights and bias.
///
///   before:  x -> Conv(W, B?) -> y -> Mul(y, c) -> z        after:  x -> Conv(W', B') -> z
///
/// Algebra, per output channel o, in double (c[o] is c broadcast to the channels):
///   Mul(y, c), Mul(c, y):  W'[o] = W[o] * c[o],  B'[o] = B[o] * c[o]
///   Div(y, c):             W'[o] = W[o] / c[o],  B'[o] = B[o] / c[o]
///   Add(y, c), Add(c, y):  B'[o] = B[o] + c[o]
///   Sub(y, c):             B'[o] = B[o] - c[o]
/// (B = 0 when the conv has no bias; the conv gains one.) W' and B' are new initializers of
/// W's element type.
///
/// Conditions (each checked before any edit; a declined pair stays as it is):
///   1. the conv is a default-domain Conv/ConvTranspose with one output, W constant and
///      floating, B absent or constant of W's type with one value per output channel;
///   2. the arithmetic node reads the conv's output and is its only reader (the output is
///      not a graph output); for Sub and Div the conv's output is the first operand;
///   3. the other operand c is a constant of W's element type;
///   4. c varies at most along the channel axis: aligned to the output (rank = W's rank) by
///      the opset's broadcasting (numpy style from opset 7; before it only B, only
///      with `broadcast` set, from `axis` when given), c has no more dims than the output, and
///      every dim of c is 1 except the channel dim, which is 1 or C_out; so z has y's shape;
///   5. Div: no c[o] is zero; every folded value is finite in W's element type;
///   6. when z is a graph output, y can take z's name (see ir::bypass).
/// Chains (Conv -> Mul -> Add, as fuse-conv-bn leaves BN -> Mul -> Add) fold in one run.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_conv_mul_add final : public pattern_pass {
 public:
  fuse_conv_mul_add();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-conv-mul-add"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fold a per-channel constant Mul/Add/Sub/Div into the preceding Conv or ConvTranspose";
  }
};

}  // namespace inferopt
