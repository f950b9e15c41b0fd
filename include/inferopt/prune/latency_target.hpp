#pragma once
/// Pruning to a measured speedup instead of a ratio (`prune --target-speedup S`).
///
/// The units are ranked by importance per millisecond they save (latency_model.hpp), and as
/// many go as the latency table says reach S. Then the cut model is timed against the
/// original in the executor, alternating; where the measured speedup misses S by more than
/// the tolerance, the table's bias is taken as measured (the goal becomes
/// S * predicted / measured) and the selection runs again, up to `max_attempts` times. The
/// attempt measured closest to S is kept. Latency does not depend on the refit, so attempts
/// are timed cut-only and the refit is solved once, for the plan kept.

#include <functional>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/group_sensitivity.hpp"
#include "inferopt/prune/latency_model.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

struct latency_target {
  double speedup = 0.0;        ///< wanted original / pruned run time; 0: none (prune by ratio)
  runtime::tensor_map feeds;   ///< the batch to time on; empty: the largest calibration batch
  int threads = 1;             ///< executor threads while timing
  int rounds = 10;             ///< alternating runs per measurement
  int max_attempts = 4;
  double tolerance = 0.05;     ///< |measured / speedup - 1| that ends the search
};

struct speedup_attempt {
  double cost_ratio = 0.0;  ///< share of the prunable milliseconds the selection removed
  double predicted = 1.0;
  double measured = 1.0;
};

/// The search itself, for any way of building and timing a model: `attempt(goal)` builds one
/// the latency table predicts at `goal` and returns what it predicted and measured (with
/// `cost_ratio` as it likes). The goal starts at `target` and, after a miss beyond
/// `tolerance`, becomes target * predicted / measured, held to save between half and twice the
/// time the target saves. Returns every attempt; `best` is the index of the one measured
/// closest to `target`.
struct speedup_search {
  std::vector<speedup_attempt> attempts;
  std::size_t best = 0;
};
[[nodiscard]] speedup_search search_speedup(double target, double tolerance, int max_attempts,
                                            const std::function<speedup_attempt(double goal)>& attempt);

/// What the search found, for the report.
struct latency_report {
  double target = 0.0;
  int threads = 1;
  double run_ms = 0.0;             ///< the original, as the table measured it
  double predicted_run_ms = 0.0;   ///< after the kept plan, by the table
  double measured_run_ms = 0.0;    ///< after the kept plan, measured (median)
  /// The original in the same alternating rounds (median): what measured_run_ms compares
  /// with. run_ms sums the table's per-node times, which the timing of each node inflates.
  double measured_reference_ms = 0.0;
  double predicted_speedup = 1.0;
  double measured_speedup = 1.0;   ///< median of the alternating rounds' ratios
  std::vector<speedup_attempt> attempts;
  std::vector<timed_node> nodes;        ///< the latency table
  std::vector<double> predicted_node_ms;  ///< per entry of `nodes`, after the kept plan
  std::vector<std::vector<double>> unit_ms;  ///< what each unit saves, by the table ([g][u])
};

/// Searches the plan whose measured speedup is closest to `target.speedup`. `m` is the model
/// `a` was made from (prepared for analysis) and is not changed; `importance` as for
/// select_units (scores of non-calibrated criteria are normalised to their group's mean).
/// `selection.ratio` and `unit_costs` are replaced; `max_group_ratio` and `round_to` hold.
/// With `sensitivity`, each attempt shares its milliseconds out by allocate_by_sensitivity
/// instead of ranking units by importance per millisecond.
/// @throws error(errc::invalid_argument) for a target <= 1, no feeds, or a target the
///         prunable groups cannot reach by the table even when cut as far as allowed.
[[nodiscard]] pruning_plan plan_for_speedup(const ir::model& m, const channel_analysis& a,
                                            const channel_analysis_options& analysis,
                                            std::vector<std::vector<double>> importance, bool comparable_scores,
                                            selection_options selection, const latency_target& target,
                                            latency_report& report, const std::vector<group_sensitivity>* sensitivity = nullptr);

}  // namespace inferopt::prune
