#pragma once
/// How much each prunable unit of channels matters, by one of the usual criteria.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"

namespace inferopt::prune {

enum class importance_criterion {
  l1,        ///< L1 norm of the filter that makes the channel (Li et al., "Pruning Filters")
  l2,        ///< L2 norm of that filter
  bn_scale,  ///< |gamma| of the BatchNormalization after it (network slimming); L2 without one
  fpgm,      ///< distance to the other filters of the layer (near the geometric median: redundant)
  random,    ///< seeded uniform scores, the baseline every criterion should beat
  /// what the unit adds to the layers reading it, on calibration data
  /// (calibrated_pruning.hpp: output_energy_importance; unit_importance refuses it)
  output_energy,
  /// what stays lost once the other inputs are refit (calibrated_pruning.hpp:
  /// reconstruction_importance; unit_importance refuses it)
  reconstruction,
  /// what each unit adds to a greedy OBS removal, one unit after another (calibrated_pruning.hpp:
  /// greedy_reconstruction_importance; unit_importance refuses it)
  greedy_reconstruction,
};

/// How the scores of coupled channels (one per source in a residual group) combine.
enum class score_reduction { mean, sum, max };

[[nodiscard]] std::optional<importance_criterion> parse_criterion(std::string_view name);
[[nodiscard]] std::string_view to_string(importance_criterion c) noexcept;
/// Whether the criterion scores units on calibration data (and unit_importance refuses it).
[[nodiscard]] bool needs_calibration(importance_criterion c) noexcept;
[[nodiscard]] std::optional<score_reduction> parse_reduction(std::string_view name);

struct importance_options {
  importance_criterion criterion = importance_criterion::l1;
  score_reduction reduction = score_reduction::mean;
  std::uint64_t seed = 0;  ///< for `random`
};

/// Scores of every unit: `result[g][u]` for unit u of group g (empty for pinned groups).
/// Higher means keep.
[[nodiscard]] std::vector<std::vector<double>> unit_importance(const ir::model& m, const channel_analysis& a,
                                                               const importance_options& options = {});

}  // namespace inferopt::prune
