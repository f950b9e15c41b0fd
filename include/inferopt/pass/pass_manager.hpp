#pragma once
/// Runs pipelines over a model. The manager owns what passes must never do themselves:
/// timing, statistics, instrumentation hooks, recursion into subgraphs, fixpoint iteration,
/// compaction and rollback of a failed pass.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/pipeline.hpp"

namespace inferopt {

/// One pipeline slot's totals: a pass inside a fixpoint group runs once per iteration, and
/// its runs add up here.
struct pass_record {
  std::string name;
  std::string group;              ///< the fixpoint group's text, empty outside groups
  int runs = 0;
  double milliseconds = 0.0;
  std::size_t nodes_before = 0;   ///< before the first run (main graph and subgraphs)
  std::size_t nodes_after = 0;    ///< nodes_before plus this pass's own changes over all runs
  std::int64_t rewrites = 0;
  bool changed = false;
  std::map<std::string, std::int64_t> counters;
};

/// One fixpoint group's totals; a nested group runs once per outer iteration.
struct fixpoint_record {
  std::string text;
  int iterations = 0;             ///< summed over all runs of the group
  bool converged = false;         ///< false when the iteration cap stopped any run
};

struct run_report {
  std::vector<pass_record> passes;
  std::vector<fixpoint_record> fixpoints;
  double milliseconds = 0.0;
  std::size_t nodes_before = 0;
  std::size_t nodes_after = 0;
  /// Copies of the graph taken for rollback: one before the first pass and one after each pass
  /// that changed the graph, since a pass that changed nothing leaves the last copy valid.
  std::size_t snapshots = 0;
};

class pass_manager {
 public:
  /// Adds an instrumentation; hooks run in the order they were added.
  void add_instrumentation(std::unique_ptr<pass_instrumentation> i) { instrumentations_.push_back(std::move(i)); }

  /// Runs every step in order. A pass that throws (or whose instrumentation throws) leaves
  /// the model exactly as before that pass, and the error is rethrown with the pass name.
  ///
  /// Rollback relies on the pass contract: a pass whose `run` returns false has not changed
  /// the graph, so the copy taken before it still holds for the next pass. Inside a fixpoint
  /// group most runs change nothing, so the graph is copied about once per changing pass
  /// instead of once per pass run.
  run_report run(pipeline& p, ir::model& m);

 private:
  bool run_step(pipeline_step& step, ir::model& m, run_report& report, const std::string& group);
  bool run_pass(pass& p, ir::model& m, pass_record& record, run_report& report);
  /// The copy to roll back to, taken now unless the last one is still valid.
  void ensure_snapshot(const ir::model& m, run_report& report);

  std::vector<std::unique_ptr<pass_instrumentation>> instrumentations_;
  std::map<const pass*, std::size_t> slots_;  // pass instance -> index in report.passes
  std::map<const pipeline_step*, std::size_t> fixpoint_slots_;  // group -> index in report.fixpoints
  // The graph as it is now, whenever set: taken before a pass, kept while passes change
  // nothing, dropped by the first pass that does.
  std::unique_ptr<ir::graph> snapshot_;
};

}  // namespace inferopt
