#pragma once
/// Which units to remove: a ratio per group (uniform) or one ranking across groups (global).

#include <cstdint>
#include <vector>

#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/channel_multiple.hpp"

namespace inferopt::prune {

struct selection_options {
  /// Share of each group's channels to remove (uniform), or of all prunable channels (global).
  double ratio = 0.3;
  /// Global: rank every unit of every group together, by scores normalized to their group's
  /// mean, so that groups with larger weights do not keep everything.
  bool global = false;
  /// Global: no group loses more than this share of its channels.
  double max_group_ratio = 0.9;
  /// Kept channel counts stay multiples of this (by default what the CPU runtimes' channel
  /// blocks want here: channel_multiple.hpp). A group smaller than this is left alone. A unit
  /// of several channels per layer (an attention head) counts as that many.
  std::int64_t round_to = preferred_channel_multiple();
  /// Global: what each unit costs (`[g][u]`, the weights it takes with it). When given, units
  /// are ranked by importance per cost as they come (scores must be comparable across groups,
  /// as calibrated output energies are), and `ratio` is the share of the total cost removed.
  std::vector<std::vector<double>> unit_costs;
  /// Each group's share of units to remove (`[g]`), in place of `ratio` and `global` when
  /// given: what an allocation (group_sensitivity.hpp) decided.
  std::vector<double> group_ratios;
};

struct group_selection {
  std::size_t group = 0;
  std::vector<std::size_t> removed_units;  ///< ascending
};

struct pruning_plan {
  std::vector<group_selection> groups;  ///< only groups that lose something
  [[nodiscard]] std::int64_t removed_units() const noexcept {
    std::int64_t n = 0;
    for (const group_selection& g : groups) n += static_cast<std::int64_t>(g.removed_units.size());
    return n;
  }
};

/// Picks the least important units. Grouped Convs lose the same count from each of their
/// groups; every group keeps at least one channel per chunk.
/// @throws error(errc::invalid_argument) for a ratio outside [0, 1) or round_to < 1.
[[nodiscard]] pruning_plan select_units(const channel_analysis& a, const std::vector<std::vector<double>>& importance,
                                        const selection_options& options = {});

}  // namespace inferopt::prune
