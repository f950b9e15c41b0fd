#pragma once
/// `reduce-mean-to-global-pool`: a ReduceMean over every spatial axis becomes
/// GlobalAveragePool, the op CNN runtimes run in their blocked layouts.
///
///   before:  x[N,C,H,W] -> ReduceMean(axes [2,3], keepdims 1)   after:  x -> GlobalAveragePool
///            x[N,C,H,W] -> ReduceMean(axes [2,3], keepdims 0)           x -> GlobalAveragePool -> Flatten(axis 1)
///
/// torchvision's `x.mean([2, 3])` (MNASNet's head) and the dynamo exporter's form of
/// `adaptive_avg_pool2d(x, 1)` (squeeze-excitation blocks, DeepLab's image pooling) both
/// export as ReduceMean; the TorchScript exporter wrote GlobalAveragePool. Both ops average
/// the same H x W values per (n, c), so the numbers agree up to the order of the sum.
///
/// Conditions (each checked; a declined ReduceMean stays as it is):
///   1. default-domain ReduceMean with one output, on a float, float16 or double input of
///      known rank >= 4 (images and volumes: on a rank-3 [batch, tokens, hidden] tensor the
///      mean over the last axis is a LayerNorm statistic, left for fuse-layer-norm);
///   2. its axes (an attribute before opset 18, a constant input from 18) are exactly the
///      axes 2 .. rank-1, given explicitly.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class reduce_mean_to_global_pool final : public pattern_pass {
 public:
  reduce_mean_to_global_pool();
  [[nodiscard]] std::string_view name() const noexcept override { return "reduce-mean-to-global-pool"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "turn a ReduceMean over every spatial axis into GlobalAveragePool (and a Flatten when keepdims=0)";
  }
};

}  // namespace inferopt
