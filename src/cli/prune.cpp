// `inferopt prune MODEL -o OUT --ratio R [--criterion l1|l2|bn|fpgm|random|energy] [--global]
// [--round-to N] [--calib-dir DIR | --calib-text FILE --tokenizer T] [--target-speedup S]
// [--explain] [--report FILE.json]`: structured channel pruning with a per-layer table. With
// calibration data, layers reading removed channels are refit by least squares,
// BatchNormalization is recalibrated, and the agreement with the unpruned model is measured;
// --target-speedup prunes to a speedup measured in the executor instead of a ratio.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "calibration_data.hpp"
#include "commands.hpp"
#include "tooling/prune_request.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/prune/bn_recalibration.hpp"
#include "inferopt/prune/prune.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

/// The shared knobs (ratio, criterion, ...), and what only the command line has.
struct prune_cli_options : tooling::prune_request {
  std::string input;
  std::string output;
  calibration_sources data;
  bool no_refit = false;
  bool explain = false;
  latency_sources latency;
  std::string report;
};

std::string ratio_text(std::int64_t after, std::int64_t before) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << (before > 0 ? static_cast<double>(after) / static_cast<double>(before) : 1.0);
  return os.str();
}

void print_layers(const prune::prune_summary& s) {
  std::size_t width = 4;
  for (const auto& l : s.layers) width = std::max(width, l.before.node.size());
  std::cout << std::left << std::setw(static_cast<int>(width + 2)) << "layer" << std::setw(20) << "op" << std::setw(14)
            << "channels" << std::setw(24) << "params" << "MACs\n";
  for (const auto& l : s.layers) {
    if (l.before.params == l.after.params && l.before.macs == l.after.macs) continue;
    std::ostringstream channels, params;
    channels << l.before.output_channels << " -> " << l.after.output_channels;
    params << human_count(l.before.params) << " -> " << human_count(l.after.params);
    std::cout << std::left << std::setw(static_cast<int>(width + 2)) << l.before.node << std::setw(20) << l.before.op
              << std::setw(14) << channels.str() << std::setw(24) << params.str() << human_count(l.before.macs) << " -> "
              << human_count(l.after.macs) << "\n";
  }
}

std::string percent(double x) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100.0 * x << "%";
  return os.str();
}

/// The library's options from the command line's. @throws error for unknown names.
prune::prune_options prune_options_of(const prune_cli_options& o) {
  tooling::prune_request request = o;
  request.refit = !o.no_refit;
  prune::prune_options options = tooling::prune_options_of(request, "--");
  options.latency.speedup = o.latency.target_speedup;
  options.latency.threads = o.latency.threads;
  options.latency.rounds = o.latency.rounds;
  return options;
}

void print_summary(const prune_cli_options& o, const prune::prune_summary& s) {
  if (s.latency) {
    std::cout << "prune: target speedup " << o.latency.target_speedup << "x (measured, " << o.latency.threads
              << " thread(s)), criterion " << o.criterion << ", round-to " << o.round_to << "\n";
  } else {
    std::cout << "prune: ratio " << o.ratio << (o.global ? " (global)" : " (per group)") << ", criterion " << o.criterion
              << ", round-to " << o.round_to << "\n";
  }
  print_layers(s);
  std::cout << "groups: " << s.prunable_groups << " prunable of " << s.groups << "; channels removed " << s.removed_units
            << " of " << s.prunable_units << " prunable\n";
  std::cout << "params " << human_count(s.params_before) << " -> " << human_count(s.params_after) << " ("
            << ratio_text(s.params_after, s.params_before) << "), MACs " << human_count(s.macs_before) << " -> "
            << human_count(s.macs_after) << " (" << ratio_text(s.macs_after, s.macs_before) << ")\n";
  if (s.budget_macs_before) {
    std::cout << "MACs at the budget's batch, every node: " << human_count(*s.budget_macs_before) << " -> "
              << human_count(*s.budget_macs_after) << " (" << ratio_text(*s.budget_macs_after, *s.budget_macs_before) << ")\n";
  }
}

/// Per group: units removed, their share of the group's importance, milliseconds saved.
void print_groups(const prune::prune_summary& s) {
  if (s.changed_groups.empty()) return;
  std::size_t width = 5;
  for (const auto& g : s.changed_groups) width = std::max(width, g.group.size());
  std::cout << std::left << std::setw(static_cast<int>(width + 2)) << "group" << std::setw(16) << "units" << std::setw(14)
            << "sensitivity" << std::setw(s.sensitivity.empty() ? 0 : 14) << (s.sensitivity.empty() ? "" : "cosine drop")
            << (s.latency ? "ms saved (table)" : "") << "\n";
  for (const auto& g : s.changed_groups) {
    std::ostringstream units;
    units << g.units_before << " -> " << g.units_before - g.units_removed;
    std::cout << std::left << std::setw(static_cast<int>(width + 2)) << g.group << std::setw(16) << units.str()
              << std::setw(14) << percent(g.importance_removed);
    if (g.cosine_drop) {
      std::ostringstream drop;
      drop << std::setprecision(3) << *g.cosine_drop;
      std::cout << std::setw(14) << drop.str();
    }
    if (s.latency) std::cout << std::fixed << std::setprecision(3) << g.ms_saved << std::defaultfloat;
    std::cout << "\n";
  }
}

void print_latency(const prune::latency_report& l) {
  std::cout << std::fixed << std::setprecision(2);
  for (std::size_t i = 0; i < l.attempts.size(); ++i) {
    const auto& t = l.attempts[i];
    std::cout << "  attempt " << i + 1 << ": " << percent(t.cost_ratio) << " of the prunable time, predicted "
              << t.predicted << "x, measured " << t.measured << "x\n";
  }
  std::cout << "latency (executor, " << l.threads << " thread(s)): measured " << l.measured_reference_ms << " -> " << l.measured_run_ms
            << " ms; by the table " << l.run_ms << " -> " << l.predicted_run_ms << " ms; speedup " << l.measured_speedup
            << "x measured, " << l.predicted_speedup << "x predicted, target " << l.target << "x\n";
  std::cout << std::defaultfloat;
}

void print_refits(const prune::prune_summary& s) {
  if (s.refits.empty()) return;
  std::cout << "least-squares refit (output error on the calibration rows, cut -> refit):\n";
  for (const prune::reader_refit& r : s.refits) {
    std::cout << "  " << r.node << ": inputs " << r.inputs_before << " -> " << r.inputs_after << ", ";
    if (!r.skipped_because.empty()) {
      std::cout << "not refit: " << r.skipped_because << "\n";
      continue;
    }
    std::cout << std::setprecision(3) << 100.0 * r.relative_error_cut << "% -> " << 100.0 * r.relative_error_refit << "%\n";
  }
  std::cout << std::defaultfloat;
}

nlohmann::json report_json(const prune_cli_options& o, const prune::prune_summary& s) {
  nlohmann::json report{{"model", o.input},          {"output", o.output}, {"ratio", o.ratio},
                        {"criterion", o.criterion},  {"reduction", o.reduction},
                        {"global", o.global},        {"round_to", o.round_to},
                        {"budget", o.budget}};
  report.update(to_json(s));
  return report;
}

bool has_batch_norm(const ir::model& m) {
  const auto nodes = m.graph().nodes();
  return std::any_of(nodes.begin(), nodes.end(), [](const ir::node* n) { return n->is("BatchNormalization"); });
}

/// How the pruned model agrees with `original` (report["agreement"]); with BatchNormalization,
/// before and after recalibrating it on the calibration batches (report["bn_recalibration"]).
void measure_agreement(const calibration_data& d, const ir::model& original, ir::model& m, nlohmann::json& report) {
  const std::string on = d.held_out ? "evaluation" : "calibration";
  const nlohmann::json pruned = report_agreement(d, original, m);
  report["agreement"] = pruned;
  if (!has_batch_norm(m)) return;
  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, d.calibration);
  const nlohmann::json with = agreement(original, m, d.evaluation);
  std::cout << "BatchNormalization recalibration: " << r.layers << " layer(s) from " << r.batches << " batch(es)\n";
  std::cout << "top-1 agreement with the unpruned model on the " << on << " batches: " << percent(pruned["top1_agreement"])
            << " without recalibration, " << percent(with["top1_agreement"]) << " with\n";
  report["bn_recalibration"] = {{"layers", r.layers}, {"batches", r.batches}, {"without", pruned}, {"with", with}};
}

void check_prune_arguments(const prune_cli_options& o) {
  refuse_overwrite(o.input, o.output);
  check_calibration_sources(o.data);
  const auto criterion = prune::parse_criterion(o.criterion);
  if (criterion && prune::needs_calibration(*criterion) && !o.data.given()) {
    throw error(errc::invalid_argument, "--criterion " + o.criterion + " measures channels on calibration data: give --calib-dir DIR or --calib-text FILE --tokenizer T");
  }
  if (o.sensitivity && !o.data.given()) {
    throw error(errc::invalid_argument, "--sensitivity measures groups on calibration data: give --calib-dir DIR or --calib-text FILE --tokenizer T");
  }
  check_latency_options(o.latency, o.data);
  probe_writable({o.output, o.report});
}

int run_prune(const prune_cli_options& o) {
  check_prune_arguments(o);
  const prune::prune_options options = prune_options_of(o);
  prune::check_budget(options);
  ir::model m = load_checked(o.input);
  const ir::model original = m.clone();
  if (o.explain) {
    prune::prepare_for_analysis(m);
    std::cout << prune::explain(prune::analyze_channels(m, options.analysis));
  }
  const calibration_data data = read_calibration(o.data, original);
  prune::prune_options run_options = options;
  if (o.latency.target_speedup != 0.0) run_options.latency.feeds = latency_batch(o.data, data, original, o.latency);
  if (run_options.budget == prune::budget_measure::macs) run_options.budget_feeds = latency_batch(o.data, data, original, o.latency);
  const prune::prune_summary s = prune::prune_model(m, run_options, data.calibration);
  ir::verify(m.graph());
  print_summary(o, s);
  print_groups(s);
  print_refits(s);
  if (s.latency) print_latency(*s.latency);
  nlohmann::json report = report_json(o, s);
  if (!data.calibration.empty()) measure_agreement(data, original, m, report);
  write_report(o.report, report);
  tooling::finish_for_onnxruntime(m);
  save_and_announce(m, o.output);
  return 0;
}

void declare_prune(CLI::App& sub, prune_cli_options& o) {
  add_model_and_output(sub, o.input, o.output);
  sub.add_option("--ratio", o.ratio, "Share of channels to remove, in [0, 1) (default 0.3)");
  sub.add_option("--criterion", o.criterion,
                 "Importance: l1, l2, bn (|gamma|), fpgm, random; on calibration data energy (what a channel adds to the layers reading it) obs (what stays lost once the layers reading it are refit around it alone) or obs-greedy (what it adds to the loss when units go one by one, the cheapest first, the rest refit after each); with --global these three rank per unit of --budget removed (default l1)");
  sub.add_option("--reduction", o.reduction, "How coupled channels' scores combine: mean, sum or max (default mean)");
  sub.add_flag("--global", o.global, "Rank channels across all layers instead of the same ratio per layer");
  sub.add_option("--max-layer-ratio", o.max_layer_ratio, "With --global: most any layer may lose (default 0.9)");
  sub.add_option("--round-to", o.round_to,
                 "Kept channel counts stay multiples of this (default " + std::to_string(o.round_to) +
                     " here: the CPU runtimes' channel block, 16 with AVX-512, else 8)");
  sub.add_option("--ignore", o.ignore, "A node whose output channels must stay (repeatable)");
  sub.add_flag("--no-default-ignores", o.no_default_ignores, "Also prune the first conv and the last layer");
  sub.add_option("--seed", o.seed, "Seed of --criterion random (default 0)");
  declare_calibration_options(sub, o.data,
                              "Calibration batches (test-data subfolders or one .pb per batch): refit the layers reading removed channels, recalibrate BatchNormalization, measure agreement");
  sub.add_flag("--no-refit", o.no_refit, "With calibration data, only cut (no least-squares refit)");
  sub.add_option("--refit-ridge", o.refit_ridge,
                 "Ridge of the refit, relative to the mean input energy (default 1e-4; larger generalises better from few calibration rows)");
  sub.add_flag("--sensitivity", o.sensitivity,
               "With calibration data: share the budget between groups by their measured end-to-end sensitivity (each cut alone at 25/50/75%, refit, output cosine drop on calibration batches it was not refit on)");
  sub.add_flag("--sequential", o.sequential,
               "With calibration data: refit layer after layer on the pruned model's own activations, towards the original outputs");
  sub.add_flag("--residual-target", o.residual_target,
               "Sequential refit towards the original residual sum where a layer's output is added to one (implies --sequential)");
  sub.add_option("--budget", o.budget,
                 "What a weighed --ratio (--global with a calibrated criterion, or --sensitivity) is a share of: the prunable channels' "
                 "weights (default) or macs, their multiply-adds at the longest calibration batch or --latency-seq-len, attention products included");
  sub.add_flag("--explain", o.explain, "Print every channel group: sources, cut sites, why pinned");
  declare_latency_options(sub, o.latency,
                          "Instead of --ratio: remove what reaches this speedup, measured in the executor (units ranked by importance per millisecond of a measured per-node latency table)");
  sub.add_option("--report", o.report, "Write a JSON report (per layer params/MACs before and after, per group sensitivity, latency, agreement)");
}

}  // namespace

command add_prune(CLI::App& app) {
  return make_command(app, "prune", "Remove whole channels (structured pruning; changes numbers)", declare_prune,
                      run_prune);
}

}  // namespace inferopt::cli
