#pragma once
/// `fuse-bias-gelu`: a bias Add feeding a GELU becomes one com.microsoft BiasGelu (erf GELU)
/// or FastGelu with its bias input (tanh GELU), as onnxruntime writes the FFN's first half
/// (docs/FUSED_OPS.md).
///
///   before:  h = Add(x, b) or Add(b, x)          b a float32 constant [D], D = x's last dim
///            y = Gelu(h)       com.microsoft Gelu, or ai.onnx Gelu (approximate "none")
///              | FastGelu(h)   com.microsoft, one input, or ai.onnx Gelu (approximate "tanh")
///   after:   y = BiasGelu(x, b) | FastGelu(x, b)
///
/// Algebra: both ops add the bias to every row before the activation, which is the Add.
///
/// Conditions (each checked in `match`; a declined pair stays as it is):
///   1. x is float32 with a static last dim D; b has shape [D];
///   2. h is read only by the GELU and is not a graph output;
///   3. the model imports no com.microsoft opset or version 1.
/// Run after fuse-gelu{domain=com.microsoft}: below opset 20 its Gelu/FastGelu are the inputs.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_bias_gelu final : public pattern_pass {
 public:
  fuse_bias_gelu();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-bias-gelu"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse a bias Add and the GELU it feeds into com.microsoft BiasGelu / FastGelu";
  }
};

}  // namespace inferopt
