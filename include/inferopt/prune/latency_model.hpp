#pragma once
/// Latency-aware pruning: a per-node latency table measured in the executor, and what a
/// pruning plan does to it.
///
/// Weights and MACs are poor stand-ins for time: an attention head also takes its share of
/// the score MatMuls, the Softmax and the reshapes with it, while an FFN neuron takes only
/// its two GEMM slices; small GEMMs run below peak. So the executor times every node on one
/// batch, and a node's time is taken to shrink with the channels it touches: for every
/// prunable group whose channels reach one of its computed inputs or its output, by the share
/// of that tensor's positions the plan keeps (a node touching two groups, such as an FFN's
/// first linear layer, scales by both). What the run spends outside the nodes stays.
///
/// The table predicts; prune_to_speedup (prune.hpp) then measures the pruned model, since
/// kernels do not scale exactly with their sizes.

#include <map>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// Median time of each node and of the whole run, from `runs` profiled runs after a warm-up.
struct node_timing {
  std::map<std::string, double> node_ms;  ///< by ir::node::label()
  double run_ms = 0.0;
};

/// Times `m` on `feeds` with `threads` executor threads.
/// @throws error(errc::invalid_argument) for runs < 1, or what the session throws.
[[nodiscard]] node_timing time_nodes(const ir::model& m, const runtime::tensor_map& feeds, int threads, int runs = 5);

/// The batch with the most elements: what latency is timed on (text padded to a length is
/// timed at that length). @throws error(errc::invalid_argument) for no batches.
[[nodiscard]] const runtime::tensor_map& largest_batch(std::span<const runtime::tensor_map> batches);

/// One model's latency against another's, measured in alternating runs (A B A B ...), so
/// that drift in the machine's speed falls on both.
struct latency_comparison {
  double reference_ms = 0.0;  ///< median
  double candidate_ms = 0.0;  ///< median
  /// Median of the per-round ratios reference / candidate.
  double speedup = 1.0;
};

/// @throws error(errc::invalid_argument) for rounds < 1, or what the sessions throw.
[[nodiscard]] latency_comparison compare_latency(runtime::session& reference, runtime::session& candidate,
                                                 const runtime::tensor_map& feeds, int rounds);

/// A node's measured time with, per prunable group it touches, how that group's units sit on
/// the tensor the node is scaled by.
struct timed_node {
  std::string node;
  std::string op;
  double ms = 0.0;
  struct group_share {
    std::size_t group = 0;
    std::int64_t positions = 0;                  ///< the tensor's channel positions of this group
    std::map<std::size_t, std::int64_t> per_unit;  ///< positions each unit holds there
  };
  std::vector<group_share> groups;
};

class latency_model {
 public:
  /// `a` must come from the model `timing` was measured on (node labels match).
  latency_model(const channel_analysis& a, const node_timing& timing);

  [[nodiscard]] double run_ms() const noexcept { return run_ms_; }
  [[nodiscard]] const std::vector<timed_node>& nodes() const noexcept { return nodes_; }

  /// Milliseconds removing each unit saves, to first order (`[g][u]`, empty for pinned
  /// groups): its share of every node it touches. The cost global selection spends.
  [[nodiscard]] std::vector<std::vector<double>> unit_costs() const;

  /// The time of each node after `plan` (same order as nodes()).
  [[nodiscard]] std::vector<double> predicted_node_ms(const pruning_plan& plan) const;
  /// The run's time after `plan`.
  [[nodiscard]] double predicted_run_ms(const pruning_plan& plan) const;

 private:
  std::vector<timed_node> nodes_;
  std::vector<std::size_t> group_units_;  ///< units of every group (0 for pinned ones)
  double run_ms_ = 0.0;
};

}  // namespace inferopt::prune
