#pragma once
// QuickGelu, the sigmoid approximation of GELU (CLIP, some ViTs): x * Sigmoid(alpha * x)
// becomes com.microsoft QuickGelu(x; alpha). A pattern of `fuse-gelu`, used only with its
// com.microsoft option: no standard op computes it. Private to src/fusion.
//
// Conditions: the Mul by alpha (a one-element finite constant, either operand order) is read
// only by the Sigmoid, the Sigmoid only by the outer Mul, whose other operand is the same x;
// x is float32; the model imports no com.microsoft opset or version 1. A plain x * Sigmoid(x)
// (SiLU) is not taken: convolution fusions and the executor handle it as it is.

#include <memory>

#include "inferopt/fusion/fuse_gelu.hpp"
#include "inferopt/pass/rewrite_pattern.hpp"

namespace inferopt::fusion::detail {

/// Matches only while `options` allow com.microsoft.
[[nodiscard]] std::unique_ptr<rewrite_pattern> make_quick_gelu_pattern(std::shared_ptr<const gelu_fusion_options> options);

}  // namespace inferopt::fusion::detail
