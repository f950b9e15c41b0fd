#include "inferopt/prune/pruning_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "inferopt/core/error.hpp"

namespace inferopt::prune {
namespace {

/// The kept count for a group of `units` asked to lose about `removed`: rounded up to a
/// multiple of the step (so pruning never exceeds the request), at least one step.
std::int64_t kept_count(std::int64_t units, double removed, std::int64_t step) {
  if (units < step) return units;
  const double wanted = static_cast<double>(units) - removed;
  auto kept = static_cast<std::int64_t>(std::ceil(wanted / static_cast<double>(step) - 1e-9)) * step;
  return std::clamp(kept, step, units);
}

/// Removes the `count` lowest-scored units; with chunks, the same number from each chunk.
group_selection lowest(std::size_t g, const channel_group& group, const std::vector<double>& scores, std::int64_t count) {
  group_selection out{g, {}};
  if (count <= 0) return out;
  const std::int64_t chunks = group.chunk_of_unit.empty() ? 1 : group.chunks;
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::vector<std::size_t> members;
    for (std::size_t u = 0; u < scores.size(); ++u) {
      if (chunks == 1 || group.chunk_of_unit[u] == c) members.push_back(u);
    }
    // Ties (equal filters) go to the later unit first, so a model keeps its leading channels.
    std::stable_sort(members.begin(), members.end(), [&](std::size_t x, std::size_t y) {
      return std::tie(scores[x], y) < std::tie(scores[y], x);
    });
    members.resize(static_cast<std::size_t>(count / chunks));
    out.removed_units.insert(out.removed_units.end(), members.begin(), members.end());
  }
  std::sort(out.removed_units.begin(), out.removed_units.end());
  return out;
}

/// Units per rounding step: a unit holding several channels of each layer (a head of 64)
/// already keeps counts multiples of them.
std::int64_t step_of(const channel_group& group, std::int64_t round_to) {
  const std::int64_t chunks = group.chunk_of_unit.empty() ? 1 : group.chunks;
  std::int64_t width = 1;
  if (!group.units.empty() && !group.sources.empty()) {
    width = std::max<std::int64_t>(1, static_cast<std::int64_t>(group.units.front().channels.size() / group.sources.size()));
  }
  return std::lcm(round_to / std::gcd(round_to, width), chunks);
}

/// Global by cost: units ranked by importance per cost, removed until `ratio` of the total
/// cost is; returns how many units each group should lose.
std::vector<double> wanted_by_cost(const channel_analysis& a, const std::vector<std::vector<double>>& importance,
                                   const selection_options& o) {
  struct ranked {
    double value;
    double cost;
    std::size_t group;
  };
  std::vector<ranked> all;
  double total = 0.0;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (!a.groups[g].prunable() || importance[g].empty()) continue;
    expects(o.unit_costs[g].size() == importance[g].size(), "one cost per unit");
    for (std::size_t u = 0; u < importance[g].size(); ++u) {
      const double cost = o.unit_costs[g][u];
      total += cost;
      all.push_back({cost > 0.0 ? importance[g][u] / cost : std::numeric_limits<double>::infinity(), cost, g});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const ranked& x, const ranked& y) { return x.value < y.value; });
  std::vector<double> wanted(a.groups.size(), 0.0);
  double removed = 0.0;
  for (const ranked& r : all) {
    if (removed >= o.ratio * total) break;
    const double cap = o.max_group_ratio * static_cast<double>(a.groups[r.group].units.size());
    if (wanted[r.group] + 1.0 > cap) continue;
    wanted[r.group] += 1.0;
    removed += r.cost;
  }
  return wanted;
}

}  // namespace

pruning_plan select_units(const channel_analysis& a, const std::vector<std::vector<double>>& importance,
                          const selection_options& o) {
  if (!(o.ratio >= 0.0 && o.ratio < 1.0)) {
    throw error(errc::invalid_argument, "pruning ratio " + std::to_string(o.ratio) + " is outside [0, 1)");
  }
  if (o.round_to < 1) throw error(errc::invalid_argument, "round-to must be at least 1");
  if (!(o.max_group_ratio > 0.0 && o.max_group_ratio < 1.0)) {
    throw error(errc::invalid_argument, "the largest share one group may lose must be in (0, 1)");
  }
  expects(importance.size() == a.groups.size(), "one score list per group");

  // How many units each group should lose, before rounding.
  expects(o.unit_costs.empty() || o.unit_costs.size() == a.groups.size(), "one cost list per group");
  std::vector<double> wanted(a.groups.size(), 0.0);
  expects(o.group_ratios.empty() || o.group_ratios.size() == a.groups.size(), "one share per group");
  if (!o.group_ratios.empty()) {
    for (std::size_t g = 0; g < a.groups.size(); ++g) {
      if (a.groups[g].prunable()) wanted[g] = std::min(o.group_ratios[g], o.max_group_ratio) * static_cast<double>(a.groups[g].units.size());
    }
  } else if (o.global && !o.unit_costs.empty()) {
    wanted = wanted_by_cost(a, importance, o);
  } else if (!o.global) {
    for (std::size_t g = 0; g < a.groups.size(); ++g) {
      if (a.groups[g].prunable()) wanted[g] = o.ratio * static_cast<double>(a.groups[g].units.size());
    }
  } else {
    struct ranked {
      double score;
      std::size_t group;
    };
    std::vector<ranked> all;
    for (std::size_t g = 0; g < a.groups.size(); ++g) {
      if (!a.groups[g].prunable() || importance[g].empty()) continue;
      const double mean = std::accumulate(importance[g].begin(), importance[g].end(), 0.0) /
                          static_cast<double>(importance[g].size());
      for (double s : importance[g]) all.push_back({mean > 0.0 ? s / mean : 1.0, g});
    }
    std::stable_sort(all.begin(), all.end(), [](const ranked& x, const ranked& y) { return x.score < y.score; });
    auto budget = static_cast<std::int64_t>(std::floor(o.ratio * static_cast<double>(all.size())));
    for (const ranked& r : all) {
      if (budget == 0) break;
      const double cap = o.max_group_ratio * static_cast<double>(a.groups[r.group].units.size());
      if (wanted[r.group] + 1.0 > cap) continue;
      wanted[r.group] += 1.0;
      --budget;
    }
  }

  pruning_plan plan;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const channel_group& group = a.groups[g];
    if (!group.prunable() || wanted[g] <= 0.0) continue;
    const auto units = static_cast<std::int64_t>(group.units.size());
    const std::int64_t kept = kept_count(units, wanted[g], step_of(group, o.round_to));
    group_selection s = lowest(g, group, importance[g], units - kept);
    if (!s.removed_units.empty()) plan.groups.push_back(std::move(s));
  }
  return plan;
}

}  // namespace inferopt::prune
