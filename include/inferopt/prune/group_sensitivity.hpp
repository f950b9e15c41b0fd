#pragma once
/// End-to-end sensitivity of each prunable group, and a budget spent where it hurts least.
///
/// Local criteria (the energy a unit adds to the layers reading it) cannot see how an error
/// grows through the layers after it. So each group is cut alone at a few shares of its units
/// (its least important ones, its readers refit), and the drop of the model's first output's
/// mean cosine with the original is measured on calibration batches the refit did not see.
/// allocate_by_sensitivity then gives each group the share whose summed drops are least for
/// the budget (drops of different groups are taken to add; between measured shares they are
/// interpolated linearly).

#include <span>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

struct sensitivity_options {
  std::vector<double> levels{0.25, 0.5, 0.75};  ///< shares of a group's units cut, ascending in (0, 1)
  std::size_t measure_batches = 32;             ///< the first batches: the drop is measured on them
  std::size_t refit_batches = 64;               ///< the last batches: each cut is refit on them
  bool refit = true;
  refit_plan_options refit_options;
  /// When not empty, only these groups (indices into the analysis) are measured: a sweep split
  /// over workers gives each a share, and the shares' rows, in group order, are the whole's.
  std::vector<std::size_t> groups;
};

struct group_sensitivity {
  std::size_t group = 0;
  std::vector<double> levels;       ///< 0 first, then the options' levels
  std::vector<double> cosine_drop;  ///< 1 - mean cosine of the first output at each level
};

/// Measures every prunable group of `a` (from `m`, prepared for analysis; not changed).
/// `selection` supplies round_to and max_group_ratio.
/// @throws error(errc::invalid_argument) for bad levels or no calibration batches.
[[nodiscard]] std::vector<group_sensitivity> measure_group_sensitivity(const ir::model& m, const channel_analysis& a,
                                                                       const channel_analysis_options& analysis,
                                                                       const std::vector<std::vector<double>>& importance,
                                                                       const selection_options& selection,
                                                                       std::span<const runtime::tensor_map> calibration,
                                                                       const sensitivity_options& options = {});

/// The group's drop at `share` of its units removed, interpolated between the measured shares.
[[nodiscard]] double cosine_drop_at(const group_sensitivity& s, double share);

/// Each group's share of units to remove (`[g]`, for selection_options::group_ratios) so that
/// `cost_ratio` of the prunable units' summed `unit_costs` goes with the least summed drop:
/// greedily, in eighths, the step with the least drop added per cost removed.
[[nodiscard]] std::vector<double> allocate_by_sensitivity(const channel_analysis& a, const std::vector<group_sensitivity>& sensitivity,
                                                          const std::vector<std::vector<double>>& unit_costs, double cost_ratio,
                                                          double max_group_ratio);

}  // namespace inferopt::prune
