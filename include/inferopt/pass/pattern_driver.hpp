#pragma once
/// The greedy driver that runs rewrite patterns over a graph, and `pattern_pass`, a pass made
/// of patterns. The driver owns the traversal, subgraph recursion, per-pattern statistics and
/// the caps; the patterns only match and rewrite (rewrite_pattern.hpp).
///
/// Strategy. Each sweep puts every live node on a worklist in graph order (topological, so a
/// producer is tried before its readers). A node is tried against the patterns rooted at its op
/// type, highest benefit first; the first that rewrites ends the attempt, and the node goes
/// back to the front of the worklist, because a rewrite usually leaves the root ready for the
/// next step of a chain (a Conv that absorbed one BatchNormalization meets the next). The
/// readers of the root's outputs are queued too when they are not waiting already, so a
/// rewrite that rewired them is seen from their side. Nodes a rewrite creates wait for the next
/// sweep. A sweep that rewrote anything starts another, up to `max_iterations`; the rewrite cap
/// stops a pattern set that keeps undoing itself. A decline is counted once per pattern, root
/// and reason in one run, however often the root is tried.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferopt/pass/pass.hpp"
#include "inferopt/pass/rewrite_pattern.hpp"

namespace inferopt {

/// Limits of one driver run, as MLIR's GreedyRewriteConfig.
struct greedy_rewrite_config {
  /// Sweeps over each graph at most; the pass manager's fixpoint groups iterate around whole
  /// passes, so a pass inside one needs a single sweep.
  int max_iterations = 1;
  /// Rewrites in one run at most, over the graph and its subgraphs; 0 means 16 per node of
  /// the graph when the run starts (at least 1024).
  std::int64_t max_rewrites = 0;
};

/// What one pattern did in a run.
struct pattern_statistics {
  std::int64_t rewrites = 0;                        ///< matches applied
  std::map<std::string, std::int64_t> declined;     ///< statistic -> roots that declined
};

/// What a driver run did.
struct driver_result {
  bool changed = false;
  int iterations = 0;       ///< sweeps of the main graph
  bool converged = true;    ///< false when a cap stopped the run with rewrites still possible
  std::map<std::string, pattern_statistics> patterns;  ///< by pattern name
};

/// Runs `patterns` greedily over `g` and its nested subgraphs (subgraphs first, so an outer
/// rewrite sees simplified bodies). Declines and rewrites are counted in `ctx` as well (the
/// decline's statistic, `rewrote(n)`, and each pattern's declared statistics at zero).
/// @throws whatever a pattern throws; the pass manager then rolls the graph back.
driver_result apply_patterns_greedily(ir::graph& g, pass_context& ctx,
                                      std::span<const rewrite_pattern* const> patterns,
                                      const greedy_rewrite_config& config = {});

/// One of each pattern type, default-constructed, for a `pattern_pass` constructor.
template <class... Patterns>
[[nodiscard]] std::vector<std::unique_ptr<rewrite_pattern>> make_patterns() {
  std::vector<std::unique_ptr<rewrite_pattern>> out;
  (out.push_back(std::make_unique<Patterns>()), ...);
  return out;
}

/// A pass made of rewrite patterns. The driver recurses into subgraphs itself, so the manager
/// does not.
class pattern_pass : public pass {
 public:
  bool run(ir::graph& g, pass_context& ctx) final;
  [[nodiscard]] bool runs_on_subgraphs() const noexcept final { return false; }
  /// The patterns, in the order ties in benefit are tried.
  [[nodiscard]] std::span<const rewrite_pattern* const> patterns() const noexcept { return views_; }

 protected:
  explicit pattern_pass(std::vector<std::unique_ptr<rewrite_pattern>> patterns, greedy_rewrite_config config = {});

 private:
  std::vector<std::unique_ptr<rewrite_pattern>> patterns_;
  std::vector<const rewrite_pattern*> views_;  // patterns_, borrowed
  greedy_rewrite_config config_;
};

}  // namespace inferopt
