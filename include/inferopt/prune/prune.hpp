#pragma once
/// Structured channel pruning in one call: analyse channel groups, score them, select, cut,
/// and report the cost of every layer before and after. BatchNormalization recalibration
/// (bn_recalibration.hpp) is a separate step that needs calibration data.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/pruning_plan.hpp"

namespace inferopt::prune {

struct prune_options {
  channel_analysis_options analysis;
  importance_options importance;
  selection_options selection;
};

/// Size and cost of one layer with weights (Conv, ConvTranspose, Gemm, MatMul, ...).
struct layer_cost {
  std::string node;  ///< name, or `#index (Op)` for unnamed nodes
  std::string op;
  std::int64_t params = 0;  ///< elements of its constant inputs
  std::int64_t macs = 0;    ///< 0 when its shapes are unknown
  std::int64_t output_channels = 0;
};

struct layer_change {
  layer_cost before;
  layer_cost after;
};

struct prune_summary {
  std::size_t groups = 0;           ///< groups some layer creates channels for
  std::size_t prunable_groups = 0;
  std::int64_t prunable_units = 0;  ///< units in prunable groups
  std::int64_t removed_units = 0;
  apply_result applied;
  std::vector<layer_change> layers;
  std::int64_t params_before = 0, params_after = 0;
  std::int64_t macs_before = 0, macs_after = 0;
};

/// The layers of `m` with their costs; shapes are inferred on a copy, `m` is not touched.
[[nodiscard]] std::vector<layer_cost> layer_costs(const ir::model& m);

/// Prunes `m` in place. Identity nodes over constants are removed first (ir::forward_constant),
/// and shapes are inferred (the analysis needs both), and again after.
/// @throws error(errc::invalid_argument) for bad options.
prune_summary prune_model(ir::model& m, const prune_options& options = {});

}  // namespace inferopt::prune
