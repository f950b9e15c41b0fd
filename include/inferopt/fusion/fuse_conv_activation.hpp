#pragma once
/// `fuse-conv-activation`: folds an activation, and optionally a residual Add before it, into
/// a Conv, giving ONNX Runtime's contrib op com.microsoft FusedConv (docs/FUSED_OPS.md).
///
///   before:  X -> Conv(W, B) -> c -> Act -> y               after:  X -> FusedConv(W, B) -> y
///            X -> Conv(W, B) -> c -> Add(c, Z) -> [Act] -> y         X -> FusedConv(W, B, Z) -> y
///
/// Algebra: FusedConv(X, W, B, Z) = Act(Conv(X, W, B) + Z), with Act one of Relu,
/// LeakyRelu(alpha), Tanh, Sigmoid, Clip(min, max), HardSigmoid(alpha, beta), HardSwish, or
/// none (the Add alone). The pass asks the pass manager to import `com.microsoft` version 1.
///
/// Conditions (each checked in `match`; a declined Conv stays as it is):
///   1. the Conv is in the default domain, has inputs X, W and optionally B, one output, and
///      no attributes other than Conv's own (auto_pad, dilations, group, kernel_shape, pads,
///      strides);
///   2. its output is float32 (ORT's FusedConv is float only) and X is not a DequantizeLinear's
///      output: a QDQ group (DequantizeLinear -> Conv -> [Relu] -> QuantizeLinear) stays whole
///      for int8 kernels (onnxruntime's QLinearConv, the executor's own);
///   3. the model imports no `com.microsoft` opset or version 1;
///   4. the Conv output has exactly one reader and is not a graph output;
///   5. an absorbed Add (or a two-input Sum; default domain) reads the Conv output once; its other
///      operand Z is float32 with a known shape equal to the Conv output's (no broadcasting;
///      each dim the same number or the same symbolic name, such as a dynamic batch), and the
///      Add's output, when an activation follows, has that activation as its only reader and
///      is not a graph output;
///   6. the activation is one FusedConv accepts, in the form of the model's opset: Clip's
///      bounds are attributes before opset 11 and constant scalars (or absent) from 11 (see
///      detail::match_fused_activation);
///   7. the last absorbed node's output, when it is a graph output, can pass its name to the
///      fused node (detail::can_bypass).
/// The fused node stands where the Add stood when Z is absorbed, so Z is always computed
/// before it.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_conv_activation final : public pattern_pass {
 public:
  fuse_conv_activation();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-conv-activation"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fold an activation and a residual Add into Conv as com.microsoft FusedConv";
  }
};

}  // namespace inferopt
