#include "inferopt/pass/pass_manager.hpp"

#include <chrono>

namespace inferopt {
namespace {

using clock_type = std::chrono::steady_clock;

double elapsed_ms(clock_type::time_point since) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - since).count();
}

/// Subgraphs first, so an outer rewrite sees simplified bodies.
bool run_on_graph(pass& p, ir::graph& g, pass_context& ctx) {
  bool changed = false;
  if (p.runs_on_subgraphs()) {
    for (ir::node* n : g.node_list()) {
      for (ir::graph* sub : n->subgraphs()) changed = run_on_graph(p, *sub, ctx) || changed;
    }
  }
  return p.run(g, ctx) || changed;
}

}  // namespace

run_report pass_manager::run(pipeline& p, ir::model& m) {
  run_report report;
  slots_.clear();
  fixpoint_slots_.clear();
  snapshot_.reset();  // the model may have changed since the last run
  report.nodes_before = m.graph().node_count_recursive();
  const auto start = clock_type::now();
  for (pipeline_step& step : p.steps) run_step(step, m, report, {});
  report.milliseconds = elapsed_ms(start);
  report.nodes_after = m.graph().node_count_recursive();
  snapshot_.reset();
  return report;
}

bool pass_manager::run_step(pipeline_step& step, ir::model& m, run_report& report, const std::string& group) {
  if (!step.is_fixpoint()) {
    auto [it, fresh] = slots_.emplace(step.single.get(), report.passes.size());
    if (fresh) {
      pass_record r;
      r.name = std::string(step.single->name());
      r.group = group;
      report.passes.push_back(std::move(r));
    }
    return run_pass(*step.single, m, report.passes[it->second], report);
  }
  // One record per group in the pipeline: a nested group's runs add up in its record.
  const std::string text = to_string(step);
  auto [it, fresh] = fixpoint_slots_.emplace(&step, report.fixpoints.size());
  if (fresh) report.fixpoints.push_back(fixpoint_record{text, 0, false});
  const std::size_t slot = it->second;
  int iterations = 0;
  bool changed_ever = false;
  bool converged = false;
  for (int iteration = 1; iteration <= step.max_iterations; ++iteration) {
    bool changed = false;
    for (pipeline_step& member : step.group) changed = run_step(member, m, report, text) || changed;
    iterations = iteration;
    changed_ever = changed_ever || changed;
    if (!changed) {
      converged = true;
      break;
    }
  }
  fixpoint_record& record = report.fixpoints[slot];
  record.iterations += iterations;
  // Converged only if every run of this group stopped by itself.
  record.converged = (fresh || record.converged) && converged;
  return changed_ever;
}

void pass_manager::ensure_snapshot(const ir::model& m, run_report& report) {
  if (snapshot_) return;
  snapshot_ = m.graph().clone();
  ++report.snapshots;
}

bool pass_manager::run_pass(pass& p, ir::model& m, pass_record& record, run_report& report) {
  ensure_snapshot(m, report);
  const std::size_t before = m.graph().node_count_recursive();
  for (auto& i : instrumentations_) i->before_pass(p, m);
  const auto start = clock_type::now();
  pass_outcome outcome;
  const std::size_t opsets_before = m.opsets.size();
  try {
    pass_context ctx(m);
    outcome.changed = run_on_graph(p, m.graph(), ctx);
    m.graph().compact();
    for (const ir::opset_import& o : ctx.required_opsets()) {
      if (!m.opset(o.domain)) m.opsets.push_back(o);
    }
    outcome.rewrites = ctx.rewrites();
    outcome.counters = ctx.counters();
    for (auto& i : instrumentations_) i->after_pass(p, m, outcome);
  } catch (const std::exception& e) {
    m.replace_graph(std::move(snapshot_));  // the next pass takes a new copy
    m.opsets.resize(opsets_before);  // imports the failed pass asked for
    for (auto& i : instrumentations_) i->after_pass_failed(p, m, e.what());
    const error failure = as_error(e);
    throw error(failure.code(), "pass '" + std::string(p.name()) + "': " + failure.what());
  }
  if (outcome.changed) snapshot_.reset();
  record.milliseconds += elapsed_ms(start);
  // Only this pass's own change counts, so rows of a fixpoint group read as a sequence.
  if (record.runs == 0) record.nodes_after = record.nodes_before = before;
  ++record.runs;
  record.nodes_after = record.nodes_after + m.graph().node_count_recursive() - before;
  record.rewrites += outcome.rewrites;
  record.changed = record.changed || outcome.changed;
  for (const auto& [k, v] : outcome.counters) record.counters[k] += v;
  return outcome.changed;
}

}  // namespace inferopt
