#pragma once
/// `fuse-skip-layer-norm`: a residual Add feeding a layer normalization becomes one
/// com.microsoft SkipLayerNormalization (SkipSimplifiedLayerNormalization for RMS norms),
/// taking a bias Add on its input along (docs/FUSED_OPS.md).
///
///   before:  s = Add(Add(x, bias) or x, skip)        bias a constant [D]
///            y = LayerNormalization(s, gamma, beta; axis -1, epsilon e)
///                (or RMSNormalization(s, gamma), SimplifiedLayerNormalization(s, gamma))
///   after:   y, _, _, s = SkipLayerNormalization(x, skip, gamma, beta, bias; epsilon e)
///            (output 3 only when something else reads s: pre-LN blocks feed it on)
///
/// Algebra: SkipLayerNormalization normalizes x + skip + bias over the last axis and can
/// return that sum; the Adds are associative in exact arithmetic, and the kernels add in the
/// order the graph did (x + bias first, then skip).
///
/// Conditions (each checked in `match`; a declined pair stays as it is):
///   1. the norm is in the default domain, over the last axis of a rank-3 float32 input
///      [B,S,D] with D static, with gamma (and beta) of shape [D], and only output 0 read;
///   2. the Add's operands are float32; one has the sum's shape (x), the other the same,
///      [1,S,D] or [S,D] (skip);
///   3. the sum is read by the norm, and when read by anything else it is not a graph output;
///      a bias Add is read only by the sum;
///   4. the model imports no com.microsoft opset or version 1.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_skip_layer_norm final : public pattern_pass {
 public:
  fuse_skip_layer_norm();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-skip-layer-norm"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse a residual Add (and a bias Add) with the LayerNorm/RMSNorm it feeds into com.microsoft SkipLayerNormalization";
  }
};

}  // namespace inferopt
