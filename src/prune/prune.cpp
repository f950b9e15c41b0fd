#include "inferopt/prune/prune.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "cuttable_constant.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/cleanup/remove_unused.hpp"
#include "inferopt/pass/fold_constants.hpp"
#include "inferopt/prune/mac_budget.hpp"

namespace inferopt::prune {
namespace {

bool has_weights(const ir::node& n) {
  const bool microsoft = n.domain() == "com.microsoft";
  return n.is("Conv") || n.is("ConvTranspose") || n.is("Gemm") || n.is("MatMul") || n.is("BatchNormalization") ||
         (microsoft && (n.op_type() == "FusedConv" || n.op_type() == "FusedGemm"));
}

std::vector<group_change> changed_groups(const channel_analysis& a, const pruning_plan& plan,
                                         const std::vector<std::vector<double>>& scores,
                                         const std::vector<std::vector<double>>& unit_ms) {
  std::vector<group_change> out;
  for (const group_selection& g : plan.groups) {
    const channel_group& group = a.groups[g.group];
    group_change c;
    c.group = a.sources[group.sources.front()].producer->label();
    c.units_before = static_cast<std::int64_t>(group.units.size());
    c.units_removed = static_cast<std::int64_t>(g.removed_units.size());
    const std::vector<double>& s = scores[g.group];
    const double total = std::accumulate(s.begin(), s.end(), 0.0);
    for (std::size_t u : g.removed_units) {
      if (total > 0.0) c.importance_removed += s[u] / total;
      if (!unit_ms.empty() && !unit_ms[g.group].empty()) c.ms_saved += unit_ms[g.group][u];
    }
    out.push_back(std::move(c));
  }
  return out;
}

/// The plan: by latency target, else by ratio; groups shared out by sensitivity when measured.
/// `budget_node_macs`: node_macs_at the budget's batch, with a multiply-add budget.
pruning_plan choose_plan(const ir::model& m, const channel_analysis& a, const std::vector<std::vector<double>>& scores,
                         bool calibrated, const prune_options& options, std::span<const runtime::tensor_map> calibration,
                         const std::map<std::string, double>& budget_node_macs, prune_summary& s) {
  if (options.latency.speedup > 0.0) {
    latency_target target = options.latency;
    if (target.feeds.empty() && !calibration.empty()) target.feeds = largest_batch(calibration);
    s.latency.emplace();
    return plan_for_speedup(m, a, options.analysis, scores, calibrated, options.selection, target, *s.latency,
                            options.sensitivity ? &s.sensitivity : nullptr);
  }
  selection_options selection = options.selection;
  if (((calibrated && selection.global) || options.sensitivity) && selection.unit_costs.empty()) {
    selection.unit_costs = options.budget == budget_measure::macs ? unit_mac_costs(a, budget_node_macs)
                                                                   : unit_weight_counts(m, a);
  }
  if (options.sensitivity) {
    selection.group_ratios = allocate_by_sensitivity(a, s.sensitivity, selection.unit_costs, selection.ratio, selection.max_group_ratio);
  }
  return select_units(a, scores, selection);
}

/// Each changed group's measured cosine drop at the share it lost.
void add_cosine_drops(const channel_analysis& a, const std::vector<group_sensitivity>& sensitivity,
                      std::vector<group_change>& changed) {
  for (group_change& c : changed) {
    for (const group_sensitivity& g : sensitivity) {
      if (a.sources[a.groups[g.group].sources.front()].producer->label() == c.group) {
        c.cosine_drop = cosine_drop_at(g, static_cast<double>(c.units_removed) / static_cast<double>(c.units_before));
      }
    }
  }
}

}  // namespace

std::vector<layer_cost> layer_costs(const ir::model& m) {
  // MACs are counted per sample: symbolic dims (a batch) count as 1.
  const ir::model copy = shaped_copy(m, {});
  const std::int64_t ir_version = copy.ir_version;
  std::vector<layer_cost> out;
  for (const ir::node* n : copy.graph().nodes()) {
    if (!has_weights(*n)) continue;
    layer_cost c{n->label(), n->op_type(), 0, ir::node_macs(*n).value_or(0), 0};
    for (const ir::value* v : n->inputs()) {
      if (!v) continue;
      if (const ir::tensor* t = ir::constant_tensor(v, ir_version)) {
        c.params += t->element_count();
      } else if (auto cos = cuttable_constant(v, ir_version); cos && cos->constant_of_shape) {
        c.params += ir::tensor::element_count(cos->dims);
      }
    }
    const ir::value* y = n->output(0);
    if (y && y->type() && y->type()->dims && y->type()->dims->size() >= 2) {
      const ir::dim& d = (*y->type()->dims)[n->is("MatMul") ? y->type()->dims->size() - 1 : 1];
      c.output_channels = d.is_static() ? d.value() : 0;
    }
    out.push_back(std::move(c));
  }
  return out;
}

void prepare_for_analysis(ir::model& m) {
  for (ir::node* n : m.graph().node_list()) {
    if (ir::is_identity_of_constant(*n, m.ir_version)) ir::forward_constant(m.graph(), n);
  }
  // Exporters write shapes and sizes as Constant nodes; cut sites are initializers.
  pass_context ctx(m);
  (void)fold_constants{}.run(m.graph(), ctx);
  (void)ir::infer_shapes(m);
}

namespace {

std::vector<std::vector<double>> importance_of(const ir::model& m, const channel_analysis& a, const prune_options& options,
                                               std::span<const runtime::tensor_map> calibration) {
  switch (options.importance.criterion) {
    case importance_criterion::output_energy: return output_energy_importance(m, a, calibration);
    case importance_criterion::reconstruction: return reconstruction_importance(m, a, calibration, options.refit_options);
    case importance_criterion::greedy_reconstruction:
      return greedy_reconstruction_importance(m, a, calibration, options.refit_options);
    default: return unit_importance(m, a, options.importance);
  }
}

/// `options` with the batch a multiply-add budget is counted at.
/// @throws error(errc::invalid_argument) as check_budget, or for no batch to count at.
prune_options with_budget_feeds(const prune_options& options, std::span<const runtime::tensor_map> calibration) {
  check_budget(options);
  if (options.budget != budget_measure::macs) return options;
  prune_options out = options;
  if (out.budget_feeds.empty()) {
    if (calibration.empty()) throw error(errc::invalid_argument, "a multiply-add budget is counted at a batch's shapes, and none was given");
    out.budget_feeds = largest_batch(calibration);
  }
  return out;
}

std::vector<group_sensitivity> sweep(const ir::model& m, const channel_analysis& a, const std::vector<std::vector<double>>& scores,
                                     const prune_options& options, sensitivity_options o,
                                     std::span<const runtime::tensor_map> calibration) {
  o.refit = options.refit;
  o.refit_options = options.refit_options;
  return measure_group_sensitivity(m, a, options.analysis, scores, options.selection, calibration, o);
}

}  // namespace

std::vector<std::size_t> prunable_group_indices(const ir::model& m, const prune_options& options) {
  ir::model copy = m.clone();
  prepare_for_analysis(copy);
  const channel_analysis a = analyze_channels(copy, options.analysis);
  std::vector<std::size_t> out;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (a.groups[g].prunable()) out.push_back(g);
  }
  return out;
}

std::vector<group_sensitivity> measure_sensitivity(const ir::model& m, const prune_options& options,
                                                   std::span<const runtime::tensor_map> calibration) {
  ir::model copy = m.clone();
  prepare_for_analysis(copy);
  const channel_analysis a = analyze_channels(copy, options.analysis);
  const auto scores = importance_of(copy, a, options, calibration);
  return sweep(copy, a, scores, options, options.sensitivity.value_or(sensitivity_options{}), calibration);
}

std::optional<budget_measure> parse_budget(std::string_view name) {
  if (name == "weights") return budget_measure::weights;
  if (name == "macs") return budget_measure::macs;
  return std::nullopt;
}

void check_budget(const prune_options& options) {
  if (options.budget != budget_measure::macs) return;
  const bool weighed = (needs_calibration(options.importance.criterion) && options.selection.global) || options.sensitivity;
  if (!weighed || options.latency.speedup > 0.0) {
    throw error(errc::invalid_argument,
                "a multiply-add budget weighs calibrated channel scores: it needs global selection with a calibrated criterion "
                "(energy, obs, obs-greedy) or a sensitivity allocation, and no latency target");
  }
}

prune_summary prune_model(ir::model& m, const prune_options& given, std::span<const runtime::tensor_map> calibration) {
  const prune_options options = with_budget_feeds(given, calibration);
  prepare_for_analysis(m);
  prune_summary s;
  std::map<std::string, double> budget_node_macs;
  if (options.budget == budget_measure::macs) {
    budget_node_macs = node_macs_at(m, options.budget_feeds);
    s.budget_macs_before = total_macs(budget_node_macs);
  }
  const std::vector<layer_cost> before = layer_costs(m);
  const channel_analysis a = analyze_channels(m, options.analysis);
  for (const channel_group& g : a.groups) {
    if (g.sources.empty()) continue;
    ++s.groups;
    if (!g.prunable()) continue;
    ++s.prunable_groups;
    s.prunable_units += static_cast<std::int64_t>(g.units.size());
  }
  const bool calibrated = needs_calibration(options.importance.criterion);
  const auto scores = importance_of(m, a, options, calibration);
  if (options.sensitivity) s.sensitivity = sweep(m, a, scores, options, *options.sensitivity, calibration);
  const pruning_plan plan = choose_plan(m, a, scores, calibrated, options, calibration, budget_node_macs, s);
  s.removed_units = plan.removed_units();
  s.changed_groups = changed_groups(a, plan, scores, s.latency ? s.latency->unit_ms : std::vector<std::vector<double>>{});
  add_cosine_drops(a, s.sensitivity, s.changed_groups);
  std::vector<planned_refit> refits;
  const bool refit = options.refit && !calibration.empty();
  if (refit && options.refit_options.sequential) {
    s.refits = cut_and_refit_in_sequence(m, a, plan, calibration, options.refit_options, s.applied);
  } else {
    if (refit) refits = plan_refits(m, a, plan, calibration, options.refit_options);
    s.applied = apply_pruning(m, a, plan);
    install_refits(m, refits);
  }
  // Cuts and refits give their nodes new constants; the old ones would still be saved.
  pass_context cleanup(m);
  (void)remove_unused{}.run(m.graph(), cleanup);
  for (planned_refit& r : refits) s.refits.push_back(std::move(r.report));

  std::map<std::string, layer_cost> after;
  for (layer_cost& c : layer_costs(m)) after[c.node] = c;
  for (const layer_cost& b : before) {
    auto it = after.find(b.node);
    s.layers.push_back({b, it != after.end() ? it->second : layer_cost{b.node, b.op, 0, 0, 0}});
    s.params_before += b.params;
    s.macs_before += b.macs;
    s.params_after += s.layers.back().after.params;
    s.macs_after += s.layers.back().after.macs;
  }
  if (options.budget == budget_measure::macs) s.budget_macs_after = total_macs_at(m, options.budget_feeds);
  return s;
}

}  // namespace inferopt::prune
