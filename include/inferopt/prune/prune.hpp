#pragma once
/// Structured channel pruning in one call: analyse channel groups, score them, select, cut,
/// and report the cost of every layer before and after. BatchNormalization recalibration
/// (bn_recalibration.hpp) is a separate step that needs calibration data.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/pruning_plan.hpp"

namespace inferopt::prune {

struct prune_options {
  channel_analysis_options analysis;
  importance_options importance;
  selection_options selection;
  /// With calibration batches: refit every MatMul/Gemm that reads removed channels.
  bool refit = true;
  refit_plan_options refit_options;
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
  /// One per MatMul/Gemm that lost inputs, when calibration batches were given.
  std::vector<reader_refit> refits;
};

/// The layers of `m` with their costs; shapes are inferred on a copy, `m` is not touched.
[[nodiscard]] std::vector<layer_cost> layer_costs(const ir::model& m);

/// What the analysis needs of a model, done in place: constants read through Identity nodes
/// (TorchScript shares equal biases that way) are read directly, Constant nodes and what
/// computes from constants alone are folded into initializers, and shapes are inferred.
void prepare_for_analysis(ir::model& m);

/// Prunes `m` in place. Identity nodes over constants are removed first (ir::forward_constant),
/// and shapes are inferred (the analysis needs both), and again after. With `calibration`
/// batches, the `output_energy` criterion scores units on them (in global mode per weight it
/// removes, the budget counted in weights), and readers of removed channels are refit.
/// @throws error(errc::invalid_argument) for bad options, or the energy criterion without
///         calibration batches.
prune_summary prune_model(ir::model& m, const prune_options& options = {},
                          std::span<const runtime::tensor_map> calibration = {});

}  // namespace inferopt::prune
