#pragma once
/// Structured channel pruning in one call: analyse channel groups, score them, select, cut,
/// and report the cost of every layer before and after. BatchNormalization recalibration
/// (bn_recalibration.hpp) is a separate step that needs calibration data.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/group_sensitivity.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/latency_target.hpp"
#include "inferopt/prune/pruning_plan.hpp"

namespace inferopt::prune {

enum class budget_measure { weights, macs };

/// "weights" or "macs"; nullopt for another name.
[[nodiscard]] std::optional<budget_measure> parse_budget(std::string_view name);

struct prune_options {
  channel_analysis_options analysis;
  importance_options importance;
  selection_options selection;
  /// With calibration batches: refit every MatMul/Gemm that reads removed channels.
  bool refit = true;
  refit_plan_options refit_options;
  /// A measured speedup to reach instead of `selection.ratio` (latency_target.hpp).
  latency_target latency;
  /// With calibration batches: share the budget out between groups by their measured
  /// end-to-end sensitivity (group_sensitivity.hpp) instead of by ranking units globally.
  std::optional<sensitivity_options> sensitivity;
  /// What `selection.ratio` is a share of where units are weighed by cost (calibrated scores
  /// with `selection.global`, or a sensitivity allocation): the prunable units' weights, or
  /// their multiply-adds at the shapes of `budget_feeds` (mac_budget.hpp). Layers whose
  /// channels all stay (a residual stream's) are in neither.
  budget_measure budget = budget_measure::weights;
  /// For `budget_measure::macs`; empty: the calibration batch with the most elements.
  runtime::tensor_map budget_feeds;
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

/// What one group lost and what that cost, for the report.
struct group_change {
  std::string group;  ///< the node that creates its channels (the first, when several do)
  std::int64_t units_before = 0;
  std::int64_t units_removed = 0;
  /// Sensitivity: the removed units' share of the group's importance (for the calibrated
  /// criteria, of the output energy its units add to their readers).
  double importance_removed = 0.0;
  double ms_saved = 0.0;  ///< by the latency table, with a latency target
  /// With sensitivity allocation: the measured output cosine drop at the share removed
  /// (interpolated between the measured shares).
  std::optional<double> cosine_drop;
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
  std::vector<group_change> changed_groups;
  /// With `prune_options::sensitivity`: every prunable group's measured drops.
  std::vector<group_sensitivity> sensitivity;
  /// With a latency target: the table, the attempts, predicted and measured speedup.
  std::optional<latency_report> latency;
  /// With `budget_measure::macs`: every node's multiply-adds at the budget's batch, the
  /// products of two computed tensors included (`macs_*` count only layers with weights,
  /// per sample).
  std::optional<std::int64_t> budget_macs_before, budget_macs_after;
};

/// The layers of `m` with their costs; shapes are inferred on a copy, `m` is not touched.
[[nodiscard]] std::vector<layer_cost> layer_costs(const ir::model& m);

/// What the analysis needs of a model, done in place: constants read through Identity nodes
/// (TorchScript shares equal biases that way) are read directly, Constant nodes and what
/// computes from constants alone are folded into initializers, and shapes are inferred.
void prepare_for_analysis(ir::model& m);

/// @throws error(errc::invalid_argument) for a multiply-add budget that nothing would weigh
///         units by: without a calibrated criterion in global selection or a sensitivity
///         allocation, or with a latency target (which budgets in milliseconds).
void check_budget(const prune_options& options);

/// Prunes `m` in place. Identity nodes over constants are removed first (ir::forward_constant),
/// and shapes are inferred (the analysis needs both), and again after. With `calibration`
/// batches, the `output_energy` criterion scores units on them (in global mode per weight it
/// removes, the budget counted in weights), and readers of removed channels are refit. With
/// `options.latency.speedup`, the plan is searched to reach that measured speedup (timed on
/// `options.latency.feeds`, else the calibration batch with the most elements).
/// @throws error(errc::invalid_argument) for bad options, the energy criterion without
///         calibration batches, or a latency target without a batch to time or out of reach.
prune_summary prune_model(ir::model& m, const prune_options& options = {},
                          std::span<const runtime::tensor_map> calibration = {});

/// The indices (into the channel analysis) of the prunable groups of `m`, as `prune_model`
/// with `options` sees them; `m` is not changed.
[[nodiscard]] std::vector<std::size_t> prunable_group_indices(const ir::model& m, const prune_options& options = {});

/// The sensitivity sweep of `prune_model` with `options.sensitivity` (default levels when
/// unset), alone and on a copy of `m`: the rows `prune_summary::sensitivity` would hold, or,
/// with `sensitivity->groups`, those groups' rows. Each group is measured independently of
/// the others, so shares of the groups measured apart give, concatenated in group order,
/// the rows of one sweep over all of them.
/// @throws error(errc::invalid_argument) as `measure_group_sensitivity` does.
[[nodiscard]] std::vector<group_sensitivity> measure_sensitivity(const ir::model& m, const prune_options& options,
                                                                 std::span<const runtime::tensor_map> calibration);

}  // namespace inferopt::prune
