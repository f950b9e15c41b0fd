#pragma once
/// `fuse-gelu`: GELU written out in elementwise ops becomes one Gelu node.
///
///   erf form (torch's nn.GELU(), BERT):
///     x -> Div(sqrt 2) or Mul(1/sqrt 2) -> Erf -> Add(1) -> a
///     then 0.5 * x * a in any association: Mul(Mul(x, a), 0.5), Mul(x, Mul(a, 0.5)) or
///     Mul(Mul(x, 0.5), a)                                     -> Gelu(x)
///   tanh form (nn.GELU(approximate="tanh"), GPT-2's gelu_new):
///     x -> Pow(x, 3) or Mul(x, Mul(x, x)) -> Mul(0.044715) -> Add(x) -> Mul(sqrt(2/pi))
///       -> Tanh -> Add(1) -> a, then 0.5 * x * a as above     -> Gelu(x, approximate=tanh)
///
/// Algebra: Gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), and its tanh approximation
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the chains compute exactly these.
///
/// Target: the ai.onnx Gelu of opset 20 when the model imports 20 or later. With the option
/// `domain=com.microsoft` (at -O3), models below opset 20 get onnxruntime's contrib ops
/// instead: com.microsoft Gelu for the erf form, FastGelu for the tanh form
/// (docs/FUSED_OPS.md).
///
/// Conditions (each checked in `match`; a declined chain stays as it is):
///   1. every node of the chain is in the default domain with the inputs and the single
///      output named above, and every constant is a one-element constant equal to the
///      number the formula names (relative 1e-5: float32 exports round them);
///   2. x is one value throughout, of a floating element type;
///   3. every intermediate value has the next node of the chain as its only reader and is
///      not a graph output;
///   4. the model imports ai.onnx 20 or later, or the option allows com.microsoft and the
///      model imports no com.microsoft opset or version 1.
///
/// The chain's last node becomes the Gelu (its output and name stay); the other nodes are
/// erased; constants they leave unread go with `remove-unused`.

#include <memory>

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

/// Where fused GELUs go below opset 20.
struct gelu_fusion_options {
  bool allow_microsoft = false;  ///< com.microsoft Gelu/FastGelu below opset 20
};

class fuse_gelu final : public pattern_pass {
 public:
  fuse_gelu();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-gelu"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse the erf and tanh forms of GELU into Gelu (opset 20, or com.microsoft Gelu/FastGelu)";
  }
  /// `domain=ai.onnx` (the default) or `domain=com.microsoft`.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

 private:
  explicit fuse_gelu(std::shared_ptr<gelu_fusion_options> options);
  std::shared_ptr<gelu_fusion_options> options_;
};

}  // namespace inferopt
