#pragma once
/// `fuse-layer-norm`: layer normalization and RMS normalization written out in elementwise
/// ops and reductions become one LayerNormalization (opset 17) or RMSNormalization (opset 23).
///
///   LayerNorm:  m = ReduceMean(x, axes a), d = Sub(x, m)
///               v = ReduceMean(Pow(d, 2) or Mul(d, d), axes a)
///   RMSNorm:    d = x, v = ReduceMean(Pow(x, 2) or Mul(x, x), axes a)
///   then        n = Div(d, Sqrt(Add(v, eps))) or Mul(d, Reciprocal(Sqrt(Add(v, eps)))), the
///               Reciprocal also as Div(1, .) (torch.rsqrt in TorchScript exports)
///               y = n [* gamma] [+ beta]        (either operand order; no beta for RMSNorm)
///   after:      y = LayerNormalization(x, gamma, beta; axis, epsilon eps)
///               or RMSNormalization(x, gamma; axis, epsilon eps)
///
/// Algebra: the chain computes (x - mean) / sqrt(var + eps) (or x / sqrt(mean(x^2) + eps))
/// over the axes a, then the affine part; the ops compute exactly that, over the trailing
/// axes from `axis` on. Without a gamma the op gets a constant of ones.
///
/// Conditions (each checked in `match`; a declined chain stays as it is):
///   1. the reductions keep dims and reduce the same trailing axes [axis, rank) of x, whose
///      rank and trailing dims are known and static; x is float32 or float64;
///   2. eps is a one-element constant, finite and not negative; the exponent is 2;
///   3. gamma and beta are constants whose dims are the normalized dims (leading 1s aside);
///   4. every intermediate value has the next node of the chain as its only reader (d: the
///      square and the division) and is not a graph output;
///   5. the model imports ai.onnx 17 or later (LayerNorm) or 23 or later (RMSNorm). With the
///      option `domain=com.microsoft` (at -O3), an RMSNorm below opset 23 becomes
///      onnxruntime's SimplifiedLayerNormalization, which it defines in the ai.onnx domain.
///
/// The chain's last node becomes the norm (its output and name stay); the others are erased.

#include <memory>

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

/// Where fused RMS norms go below opset 23.
struct layer_norm_fusion_options {
  bool allow_runtime_ops = false;  ///< onnxruntime's SimplifiedLayerNormalization
};

class fuse_layer_norm final : public pattern_pass {
 public:
  fuse_layer_norm();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-layer-norm"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse LayerNorm / RMSNorm written out in reductions and elementwise ops into LayerNormalization / RMSNormalization";
  }
  /// `domain=ai.onnx` (the default) or `domain=com.microsoft`.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

 private:
  explicit fuse_layer_norm(std::shared_ptr<layer_norm_fusion_options> options);
  std::shared_ptr<layer_norm_fusion_options> options_;
};

}  // namespace inferopt
