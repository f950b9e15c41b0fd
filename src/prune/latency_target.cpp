#include "inferopt/prune/latency_target.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "inferopt/core/error.hpp"
#include "inferopt/prune/apply_pruning.hpp"

namespace inferopt::prune {
namespace {

/// Scores of criteria whose scale differs between groups (weight norms) become comparable
/// by dividing each group by its mean, as uniform global selection does.
void normalise_per_group(std::vector<std::vector<double>>& importance) {
  for (std::vector<double>& scores : importance) {
    if (scores.empty()) continue;
    const double mean = std::accumulate(scores.begin(), scores.end(), 0.0) / static_cast<double>(scores.size());
    for (double& s : scores) s = mean > 0.0 ? s / mean : 1.0;
  }
}

double total_cost(const std::vector<std::vector<double>>& costs) {
  double total = 0.0;
  for (const auto& g : costs) total = std::accumulate(g.begin(), g.end(), total);
  return total;
}

std::string speedup_text(double s) {
  std::ostringstream os;
  os.precision(3);
  os << s << "x";
  return os.str();
}

/// Times `plan` cut into a copy of `m` against `reference` (a session of `m`).
latency_comparison time_plan(const ir::model& m, const channel_analysis_options& analysis, const pruning_plan& plan,
                             runtime::session& reference, const latency_target& target, const runtime::tensor_map& feeds) {
  ir::model trial = m.clone();
  // The copy's analysis numbers groups and units as the original's: the plan applies as is.
  const channel_analysis ta = analyze_channels(trial, analysis);
  (void)apply_pruning(trial, ta, plan);
  runtime::session candidate(trial, {.threads = target.threads});
  return compare_latency(reference, candidate, feeds, target.rounds);
}

/// The next goal: the target corrected by the table's bias as this attempt measured it. One
/// noisy timing must not send the search to a plan that removes nothing (or everything), so
/// the corrected goal saves between half and twice the time the target saves.
double corrected_goal(double target, const speedup_attempt& a) {
  const double saving = 1.0 - 1.0 / target;
  const double least = 1.0 / (1.0 - 0.5 * saving), most = 1.0 / (1.0 - std::min(0.95, 2.0 * saving));
  return std::clamp(target * a.predicted / a.measured, least, most);
}

}  // namespace

speedup_search search_speedup(double target, double tolerance, int max_attempts,
                              const std::function<speedup_attempt(double goal)>& attempt) {
  speedup_search out;
  double goal = target;
  for (int i = 0; i < std::max(1, max_attempts); ++i) {
    out.attempts.push_back(attempt(goal));
    const speedup_attempt& a = out.attempts.back();
    const auto miss = [&](const speedup_attempt& x) { return std::abs(x.measured / target - 1.0); };
    if (miss(a) < miss(out.attempts[out.best])) out.best = out.attempts.size() - 1;
    if (miss(a) <= tolerance) break;
    goal = corrected_goal(target, a);
  }
  return out;
}

pruning_plan plan_for_speedup(const ir::model& m, const channel_analysis& a, const channel_analysis_options& analysis,
                              std::vector<std::vector<double>> importance, bool comparable_scores, selection_options selection,
                              const latency_target& target, latency_report& report,
                              const std::vector<group_sensitivity>* sensitivity) {
  if (!(target.speedup > 1.0) || !std::isfinite(target.speedup)) {
    throw error(errc::invalid_argument, "target speedup must be a number above 1, not " + std::to_string(target.speedup));
  }
  if (target.feeds.empty()) throw error(errc::invalid_argument, "a target speedup needs a batch to time the model on");
  if (!comparable_scores) normalise_per_group(importance);

  const latency_model table(a, time_nodes(m, target.feeds, target.threads));
  report = {};
  report.target = target.speedup;
  report.threads = target.threads;
  report.run_ms = table.run_ms();
  report.nodes = table.nodes();
  report.unit_ms = table.unit_costs();
  selection.global = true;
  selection.unit_costs = report.unit_ms;
  const double prunable_ms = total_cost(selection.unit_costs);

  const auto plan_at = [&](double cost_ratio) {
    selection.ratio = std::clamp(cost_ratio, 0.0, 0.999);
    if (sensitivity) {
      selection.group_ratios = allocate_by_sensitivity(a, *sensitivity, selection.unit_costs, selection.ratio, selection.max_group_ratio);
    }
    return select_units(a, importance, selection);
  };
  const auto predicted = [&](const pruning_plan& p) { return table.run_ms() / table.predicted_run_ms(p); };
  const double reachable = predicted(plan_at(1.0));
  if (reachable < target.speedup * (1.0 - target.tolerance)) {
    throw error(errc::invalid_argument, "target speedup " + speedup_text(target.speedup) +
                                            " is out of reach: the latency table predicts at most " +
                                            speedup_text(reachable) + " with what may be pruned");
  }

  runtime::session reference(m, {.threads = target.threads});
  std::vector<pruning_plan> plans;
  std::vector<latency_comparison> timings;
  const speedup_search search = search_speedup(target.speedup, target.tolerance, target.max_attempts, [&](double goal) {
    const double cost_ratio = prunable_ms > 0.0 ? table.run_ms() * (1.0 - 1.0 / goal) / prunable_ms : 0.0;
    plans.push_back(plan_at(cost_ratio));
    const latency_comparison& timing = timings.emplace_back(time_plan(m, analysis, plans.back(), reference, target, target.feeds));
    return speedup_attempt{selection.ratio, predicted(plans.back()), timing.speedup};
  });
  report.attempts = search.attempts;
  const speedup_attempt& kept = search.attempts[search.best];
  report.predicted_speedup = kept.predicted;
  report.measured_speedup = kept.measured;
  report.measured_run_ms = timings[search.best].candidate_ms;
  report.measured_reference_ms = timings[search.best].reference_ms;
  report.predicted_run_ms = table.run_ms() / kept.predicted;
  pruning_plan best = std::move(plans[search.best]);
  report.predicted_node_ms = table.predicted_node_ms(best);
  return best;
}

}  // namespace inferopt::prune
