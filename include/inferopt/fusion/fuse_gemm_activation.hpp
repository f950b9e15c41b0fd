#pragma once
/// `fuse-gemm-activation`: folds an activation into a Gemm, giving ONNX Runtime's contrib op
/// com.microsoft FusedGemm (docs/FUSED_OPS.md).
///
///   before:  A -> Gemm(B, C) -> g -> Act -> y        after:  A -> FusedGemm(B, C) -> y
///
/// Algebra: FusedGemm(A, B, C) = Act(alpha * A' * B' + beta * C), with Act one of Relu,
/// LeakyRelu (activation_alpha), Tanh, Sigmoid, HardSigmoid (activation_alpha,
/// activation_beta). ORT's FusedGemm rejects Clip and HardSwish, so those stay unfused. The
/// pass asks the pass manager to import `com.microsoft` version 1.
///
/// Conditions (each checked in `match`; a declined Gemm stays as it is):
///   1. the Gemm is in the default domain, has inputs A, B and optionally C, one output, and
///      no attributes other than alpha, beta, transA and transB (Gemm-6's `broadcast` is not
///      a FusedGemm attribute);
///   2. its output is float32;
///   3. the model imports no `com.microsoft` opset or version 1;
///   4. the Gemm output has exactly one reader, not a graph output, and that reader is an
///      activation FusedGemm accepts (Clip and HardSwish are declined);
///   5. the activation's output, when it is a graph output, can pass its name to the fused
///      node (detail::can_bypass).

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_gemm_activation final : public pattern_pass {
 public:
  fuse_gemm_activation();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-gemm-activation"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fold an activation into Gemm as com.microsoft FusedGemm";
  }
};

}  // namespace inferopt
