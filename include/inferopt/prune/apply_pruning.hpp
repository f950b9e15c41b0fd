#pragma once
/// Physically removes the selected channels: weights, biases, normalization parameters,
/// per-channel constants, Reshape targets, Split sizes and depthwise group counts shrink, and
/// value shapes are inferred again.

#include <cstdint>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/pruning_plan.hpp"

namespace inferopt::prune {

struct apply_result {
  std::int64_t removed_channels = 0;  ///< channel ids removed (a residual unit counts once per source)
  std::int64_t cut_sites = 0;         ///< sites that shrank
};

/// Cuts `m` by `plan`. `a` must come from `analyze_channels(m)` on this very model, unchanged
/// since: it holds handles into it.
apply_result apply_pruning(ir::model& m, const channel_analysis& a, const pruning_plan& plan);

}  // namespace inferopt::prune
