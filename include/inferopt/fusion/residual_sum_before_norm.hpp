#pragma once
/// `residual-sum-before-norm`: a residual Add read only by a LayerNormalization is written as
/// a two-input Sum, the inverse of `sum-to-add` at this one place.
///
///   before:  Add(x, skip) -> s -> LayerNormalization(s, gamma, beta)
///   after:   Sum(x, skip) -> s -> LayerNormalization(s, gamma, beta)
///
/// Why: onnxruntime fuses Add -> LayerNormalization into com.microsoft SkipLayerNormalization
/// whenever it knows both operands' shapes, and its CPU kernel for that op measured 2.3-4.3x
/// slower than its Add and LayerNormalization kernels together (onnxruntime 1.32, hidden 384
/// and 768, batch 1 and 4, 1 and 2 threads; benchmarks/quant/ort_skip_layer_norm.py). Its fusion matches Add
/// only, so the Sum keeps the two fast kernels. Nothing else changes: from opset 8 Sum
/// broadcasts as Add does, and both compute one rounded float addition.
///
/// Run it last, for onnxruntime on CPU: every -O level canonicalizes Sum back to Add
/// (`sum-to-add`), and on GPU onnxruntime's SkipLayerNormalization is the faster choice.
///
/// Conditions: (1) default domain, opset >= 8, two inputs, both present; (2) the sum is read
/// by one node only, a default-domain LayerNormalization, as its input 0 (onnxruntime fuses
/// nothing else), and it is not a graph output.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class residual_sum_before_norm final : public pattern_pass {
 public:
  residual_sum_before_norm();
  [[nodiscard]] std::string_view name() const noexcept override { return "residual-sum-before-norm"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "write a residual Add read by a LayerNormalization as Sum (onnxruntime's CPU SkipLayerNormalization is slower)";
  }
};

}  // namespace inferopt
