#pragma once
/// `fuse-conv-bn`: folds an inference BatchNormalization into the Conv or ConvTranspose
/// that feeds it.
///
///   before:  x -> Conv(W, B?) -> y -> BatchNormalization(scale, beta, mean, var) -> z
///   after:   x -> Conv(W', B') -> z
///
/// Algebra, per output channel o, in double:
///   s[o]  = scale[o] / sqrt(var[o] + epsilon)
///   W'[o] = W[o] * s[o]        (Conv: W[o, ...]; ConvTranspose: W[ci, j, ...] for every input
///                               channel ci of group g, where o = g * (C_out / group) + j)
///   B'[o] = (B[o] - mean[o]) * s[o] + beta[o]     (B = 0 when the conv has no bias)
/// W' and B' are new initializers of W's element type; the conv gains a bias if it had none.
///
/// Conditions (each checked before any edit; a declined pair stays as it is):
///   1. the conv is a default-domain Conv/ConvTranspose with one output, W constant and
///      floating, B absent or constant of W's type with one value per output channel;
///   2. the BatchNormalization reads the conv's output as its input X, and is that output's
///      only reader (the output is not a graph output);
///   3. scale, beta, mean and var are constant, floating and rank 1 with one value per conv
///      output channel;
///   4. inference form: only the first output is used (the training outputs of opsets < 14
///      are absent or unused); opset >= 14: training_mode is 0; opset <= 8: spatial is not 0
///      (per-activation statistics do not fold into per-channel weights);
///   5. var + epsilon is positive and every folded value is finite in W's element type;
///   6. when z is a graph output, y can take z's name (see ir::bypass).
/// A chain of BatchNormalizations after one conv folds in one run.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_conv_bn final : public pattern_pass {
 public:
  fuse_conv_bn();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-conv-bn"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fold BatchNormalization into the preceding Conv or ConvTranspose";
  }
};

}  // namespace inferopt
