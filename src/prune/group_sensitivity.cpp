#include "inferopt/prune/group_sensitivity.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "output_cosine.hpp"

namespace inferopt::prune {
namespace {

/// The mean cosine drop of `m` cut by `plan` (and refit) against `reference` outputs.
double drop_of(const ir::model& m, const channel_analysis_options& analysis, const pruning_plan& plan,
               std::span<const runtime::tensor_map> measure, std::span<const runtime::tensor_map> refit_on,
               const std::vector<std::vector<float>>& reference, const sensitivity_options& o) {
  ir::model cut = m.clone();
  const channel_analysis a = analyze_channels(cut, analysis);  // numbers groups as the original's
  std::vector<planned_refit> refits;
  if (o.refit) refits = plan_refits(cut, a, plan, refit_on, o.refit_options);
  (void)apply_pruning(cut, a, plan);
  install_refits(cut, refits);
  return mean_cosine_drop(reference, first_outputs(cut, measure));
}

}  // namespace

std::vector<group_sensitivity> measure_group_sensitivity(const ir::model& m, const channel_analysis& a,
                                                         const channel_analysis_options& analysis,
                                                         const std::vector<std::vector<double>>& importance,
                                                         const selection_options& selection,
                                                         std::span<const runtime::tensor_map> calibration,
                                                         const sensitivity_options& o) {
  if (calibration.empty()) throw error(errc::invalid_argument, "sensitivity is measured on calibration batches, and none were given");
  if (o.levels.empty() || !std::is_sorted(o.levels.begin(), o.levels.end()) || o.levels.front() <= 0.0 || o.levels.back() >= 1.0) {
    throw error(errc::invalid_argument, "sensitivity levels must ascend within (0, 1)");
  }
  // Measured on the first batches, refit on the last ones; with few batches they overlap.
  const std::size_t n = calibration.size();
  const auto measure = calibration.first(std::min(n, std::max<std::size_t>(1, o.measure_batches)));
  const auto refit_on = calibration.last(std::min(n, std::max<std::size_t>(1, o.refit_batches)));
  const std::vector<std::vector<float>> reference = first_outputs(m, measure);
  std::vector<group_sensitivity> out;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (!a.groups[g].prunable()) continue;
    if (!o.groups.empty() && std::find(o.groups.begin(), o.groups.end(), g) == o.groups.end()) continue;
    group_sensitivity s{g, {0.0}, {0.0}};
    for (double level : o.levels) {
      selection_options one = selection;
      one.group_ratios.assign(a.groups.size(), 0.0);
      one.group_ratios[g] = level;
      const pruning_plan plan = select_units(a, importance, one);
      if (plan.groups.empty()) continue;  // rounding keeps everything at this share
      s.levels.push_back(level);
      s.cosine_drop.push_back(std::max(s.cosine_drop.back(), drop_of(m, analysis, plan, measure, refit_on, reference, o)));
    }
    out.push_back(std::move(s));
  }
  return out;
}

double cosine_drop_at(const group_sensitivity& s, double share) {
  for (std::size_t i = 1; i < s.levels.size(); ++i) {
    if (share <= s.levels[i]) {
      const double t = (share - s.levels[i - 1]) / (s.levels[i] - s.levels[i - 1]);
      return s.cosine_drop[i - 1] + t * (s.cosine_drop[i] - s.cosine_drop[i - 1]);
    }
  }
  return s.cosine_drop.back();
}

std::vector<double> allocate_by_sensitivity(const channel_analysis& a, const std::vector<group_sensitivity>& sensitivity,
                                            const std::vector<std::vector<double>>& unit_costs, double cost_ratio,
                                            double max_group_ratio) {
  constexpr int steps = 8;
  std::vector<double> group_cost(a.groups.size(), 0.0);
  double total = 0.0;
  for (const group_sensitivity& s : sensitivity) {
    group_cost[s.group] = std::accumulate(unit_costs[s.group].begin(), unit_costs[s.group].end(), 0.0);
    total += group_cost[s.group];
  }
  std::vector<int> at(sensitivity.size(), 0);
  double removed = 0.0;
  while (removed < cost_ratio * total) {
    std::size_t best = sensitivity.size();
    double best_price = 0.0;
    for (std::size_t i = 0; i < sensitivity.size(); ++i) {
      const double next = (at[i] + 1) / static_cast<double>(steps);
      if (next > std::min(max_group_ratio, sensitivity[i].levels.back()) + 1e-12) continue;
      const double cost = group_cost[sensitivity[i].group] / steps;
      if (!(cost > 0.0)) continue;
      const double price = (cosine_drop_at(sensitivity[i], next) - cosine_drop_at(sensitivity[i], at[i] / static_cast<double>(steps))) / cost;
      if (best == sensitivity.size() || price < best_price) best = i, best_price = price;
    }
    if (best == sensitivity.size()) break;
    ++at[best];
    removed += group_cost[sensitivity[best].group] / steps;
  }
  std::vector<double> ratios(a.groups.size(), 0.0);
  for (std::size_t i = 0; i < sensitivity.size(); ++i) ratios[sensitivity[i].group] = at[i] / static_cast<double>(steps);
  return ratios;
}

}  // namespace inferopt::prune
