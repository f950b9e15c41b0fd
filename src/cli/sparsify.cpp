// `inferopt sparsify MODEL -o OUT [--block RxC] [--sparsity S] [--min-size N] [--norm l1|l2]
// [--calib-dir DIR | --calib-text FILE --tokenizer T] [--dry-run] [--report FILE.json]`: the
// `sparsify-blocks` pass with a table of what it rewrites and the predicted speedup of each
// product. With calibration data the blocks are chosen, and the kept weights updated, from
// the layers' input moments first (prune::apply_calibrated_block_sparsity); the pass then
// finds exactly the zeroed blocks.

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "calibration_data.hpp"
#include "commands.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
#include "inferopt/prune/latency_target.hpp"
#include "inferopt/prune/permute_units.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

struct sparsify_cli_options {
  std::string input;
  std::string output;
  std::string block = "16x16";
  std::string sparsity = "0.75";
  std::string min_size = "65536";
  std::string norm = "l2";
  calibration_sources data;
  std::string criterion;  // magnitude, obs or obs-greedy; default obs with calibration data, else magnitude
  std::int64_t chunk_rows = 128;
  double damping = prune::block_sparsity_options{}.relative_damping;
  double max_layer_sparsity = prune::block_sparsity_options{}.max_layer_sparsity;
  bool uniform = false;
  bool sensitivity = false;
  bool permute = false;
  bool sequential = false;
  bool residual_target = false;  // implies sequential
  bool dry_run = false;
  latency_sources latency;
  double max_cosine_drop = 0.0;
  std::string report;
};

std::string speedup_text(double s) {
  if (std::isinf(s)) return "inf";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << s << "x";
  return os.str();
}

std::string percent_text(double f) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100.0 * f << "%";
  return os.str();
}

void print_table(std::ostream& out, const std::vector<sparse::sparsify_candidate>& plan) {
  std::vector<const sparse::sparsify_candidate*> rows;
  std::size_t name_width = 4;
  for (const auto& c : plan) {
    if (!c.declined.empty()) continue;
    rows.push_back(&c);
    name_width = std::max(name_width, c.node.size());
  }
  if (rows.empty()) return;
  out << std::left << std::setw(static_cast<int>(name_width + 2)) << "node" << std::setw(8) << "op"
            << std::setw(16) << "weight K x N" << std::setw(20) << "blocks kept" << std::setw(10) << "sparsity"
            << std::setw(6) << "relu" << "predicted speedup\n";
  for (const sparse::sparsify_candidate* c : rows) {
    std::ostringstream weight, blocks;
    weight << c->k << " x " << c->n;
    blocks << c->blocks_kept << " / " << c->blocks_total;
    out << std::left << std::setw(static_cast<int>(name_width + 2)) << c->node << std::setw(8) << c->op_type
              << std::setw(16) << weight.str() << std::setw(20) << blocks.str() << std::setw(10)
              << percent_text(c->block_sparsity) << std::setw(6) << (c->fuses_relu ? "yes" : "no")
              << speedup_text(c->predicted_speedup) << "\n";
  }
}

nlohmann::json report_json(const sparsify_cli_options& o, const sparse::sparsify_options& settings,
                           const std::string& baseline, const std::vector<sparse::sparsify_candidate>& plan) {
  return {{"model", o.input},
          {"output", o.dry_run ? nlohmann::json(nullptr) : nlohmann::json(o.output)},
          {"dry_run", o.dry_run},
          {"block", {settings.block.rows, settings.block.cols}},
          {"sparsity", settings.sparsity},
          {"min_size", settings.min_size},
          {"norm", settings.norm == sparse::block_norm::l1 ? "l1" : "l2"},
          {"criterion", !o.data.given() || o.criterion == "magnitude" ? "magnitude" : o.criterion.empty() ? "obs" : o.criterion},
          {"dense_baseline_isa", baseline},
          {"nodes", tooling::to_json(plan)}};
}

/// Prints the settings, the table and the counts of the plan; returns how many products it
/// rewrites.
std::int64_t print_plan(std::ostream& out, const sparsify_cli_options& o, const sparse::sparsify_options& settings,
                        const std::string& isa, const std::vector<sparse::sparsify_candidate>& plan) {
  std::map<std::string, int> declined;
  std::int64_t rewrites = 0, products = 0;
  for (const auto& c : plan) {
    ++products;
    if (c.declined.empty()) ++rewrites;
    else ++declined[c.declined];
  }

  out << "sparsify-blocks: block " << settings.block.rows << "x" << settings.block.cols << ", sparsity "
            << settings.sparsity << ", min-size " << settings.min_size << ", norm "
            << (settings.norm == sparse::block_norm::l1 ? "l1" : "l2") << (o.dry_run ? " (dry run)" : "") << "\n";
  print_table(out, plan);
  out << rewrites << " of " << products << " MatMul/Gemm node(s) " << (o.dry_run ? "would be rewritten" : "rewritten")
            << " to inferopt.BlockSparseMatMul";
  if (!declined.empty()) {
    out << "; declined:";
    for (const auto& [why, count] : declined) out << " " << why << " " << count;
  }
  out << "\n";
  if (rewrites > 0) {
    out << "predicted speedup: e(s) / (1 - s) fitted to docs/BENCHMARKS.md, against a dense GEMM built for "
              << (sparse::dense_baseline_from(isa) == sparse::dense_baseline::avx512 ? "AVX-512" : "AVX2")
              << " (the executor's here: " << isa << "); a model, not a measurement (see `inferopt bench`)\n";
  }
  return rewrites;
}

/// Runs the pass (verified) and checks it rewrote what the plan said; adds the statistics
/// and counters to the report.
void rewrite(std::ostream& out, std::unique_ptr<sparse::sparsify_blocks> pass, ir::model& m, std::int64_t rewrites,
             nlohmann::json& report) {
  const ir::model_statistics before = statistics_of(m);
  pipeline p;
  p.steps.emplace_back().single = std::move(pass);
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  const run_report r = manager.run(p, m);
  ir::verify(m.graph());
  if (r.passes.size() != 1 || r.passes[0].rewrites != rewrites) {
    throw error(errc::internal, "sparsify-blocks rewrote " + std::to_string(r.passes.empty() ? 0 : r.passes[0].rewrites) +
                                    " node(s), its plan said " + std::to_string(rewrites));
  }
  const ir::model_statistics after = statistics_of(m);
  out << "params " << human_count(before.params) << " -> " << human_count(after.params) << " ("
            << human_bytes(before.param_bytes) << " -> " << human_bytes(after.param_bytes) << ")\n";
  report["before"] = to_json(before);
  report["after"] = to_json(after);
  report["counters"] = r.passes[0].counters;
}

/// How one attempt allocates: `sparsity` of the weights, or (latency-aware) `saving_ms`
/// from layers taking `layer_ms` dense.
struct allocation {
  std::map<std::string, double> layer_ms;  ///< by node label; empty: pay in weights
  double saving_ms = 0.0;
};

/// Chooses and updates the blocks of every product the plan rewrites from the calibration
/// data; prints and reports each layer's output error against magnitude alone.
/// Returns each layer's sparsity (they differ when `allocate`); `report` becomes the report's
/// "calibrated" section. `level_errors` caches the allocation's error table across attempts.
std::map<std::string, double> calibrate_blocks(std::ostream& out, ir::model& m, const sparse::sparsify_options& settings,
                                               const std::vector<sparse::sparsify_candidate>& plan, const calibration_data& data,
                                               const sparsify_cli_options& o, const allocation& budget,
                                               std::vector<std::vector<double>>& level_errors, nlohmann::json& report) {
  std::vector<const ir::node*> layers;
  prune::block_sparsity_options options;
  for (const auto& c : plan) {
    if (!c.declined.empty()) continue;
    layers.push_back(c.at);
    if (!budget.layer_ms.empty()) options.layer_ms.push_back(budget.layer_ms.count(c.node) ? budget.layer_ms.at(c.node) : 0.0);
  }
  options.block_rows = settings.block.rows;
  options.block_cols = settings.block.cols;
  options.sparsity = settings.sparsity;
  options.chunk_rows = o.chunk_rows;
  options.relative_damping = o.damping;
  options.max_layer_sparsity = o.max_layer_sparsity;
  options.allocate = !o.uniform;
  options.end_to_end = o.sensitivity;
  options.sequential = o.sequential || o.residual_target;
  options.residual_target = o.residual_target;
  options.greedy = o.criterion == "obs-greedy";
  options.saving_ms = budget.saving_ms;
  const auto baseline = sparse::dense_baseline_from(runtime::dense_gemm_isa());
  options.time_fraction = [baseline](double s) { return 1.0 / sparse::predicted_speedup(s, baseline); };
  const std::vector<prune::block_sparsity_layer> done =
      prune::apply_calibrated_block_sparsity(m, layers, data.calibration, options, std::int64_t{512} << 20, &level_errors);
  std::size_t width = 5;
  for (const auto& l : done) width = std::max(width, l.node.size());
  // Allocated, the table's value at the layer's sparsity: what the layer was predicted to cost alone.
  const std::string alone = o.uniform ? "" : o.sensitivity ? "cosine drop alone" : "error alone";
  out << "calibrated blocks (" << data.calibration.size() << " batch(es); relative output error on the calibration rows):\n"
      << std::left << std::setw(static_cast<int>(width + 2)) << "layer" << std::setw(14) << "by magnitude" << std::setw(14)
      << "calibrated" << std::setw(10) << "sparsity" << std::setw(9) << "bias" << alone << "\n";
  double predicted_drop = 0.0;
  nlohmann::json rows = tooling::to_json(done);
  std::map<std::string, double> sparsity;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const prune::block_sparsity_layer& l = done[i];
    const double s = static_cast<double>(l.result.blocks_removed) / static_cast<double>(std::max<std::int64_t>(l.result.blocks_total, 1));
    sparsity[l.node] = s;
    std::ostringstream mag, cal;
    mag << std::setprecision(4) << l.result.relative_error_magnitude;
    cal << std::setprecision(4) << l.result.relative_error;
    out << std::left << std::setw(static_cast<int>(width + 2)) << l.node << std::setw(14) << mag.str() << std::setw(14) << cal.str()
        << std::setw(10) << percent_text(s) << std::setw(9) << (l.bias_updated ? "updated" : "none");
    if (!o.uniform) out << std::setprecision(4) << l.sensitivity << std::defaultfloat;
    out << "\n";
    predicted_drop += l.sensitivity;
    if (budget.layer_ms.count(l.node)) rows[i]["dense_ms"] = budget.layer_ms.at(l.node);
  }
  if (o.sensitivity) {
    out << "the layers' cosine drops alone sum to " << std::setprecision(4) << predicted_drop << std::defaultfloat
        << " (the allocation takes them to add)\n";
  }
  report = {{"batches", data.calibration.size()}, {"chunk_rows", o.chunk_rows}, {"damping", o.damping}, {"max_layer_sparsity", o.max_layer_sparsity}, {"allocated", !o.uniform}, {"sensitivity", o.sensitivity}, {"sequential", options.sequential},
            {"residual_target", o.residual_target}, {"layers", rows}};
  return sparsity;
}

/// One sparsified model, its report and what it printed.
struct attempt {
  ir::model model;
  nlohmann::json report;
  std::string printed;  ///< a search's attempts print here; the kept one's text is shown
};

/// Sparsifies a copy of `original` at `sparsity` (or, latency-aware, by `budget`), printing to
/// `out`. Dry runs stop before the rewrite.
attempt sparsify_once(std::ostream& out, const sparsify_cli_options& o, const ir::model& original, const calibration_data& data,
                      const std::string& sparsity, const allocation& budget, std::vector<std::vector<double>>& level_errors) {
  const bool calibrated = o.data.given() && o.criterion != "magnitude";
  // The pass checks and keeps the options, so the plan and the rewrite read the same ones.
  auto pass = std::make_unique<sparse::sparsify_blocks>();
  pass->set_option("block", o.block);
  pass->set_option("sparsity", sparsity);
  pass->set_option("min-size", o.min_size);
  pass->set_option("norm", o.norm);
  const sparse::sparsify_options settings = pass->settings();
  attempt a{original.clone(), {}};
  const std::string isa = runtime::dense_gemm_isa();
  std::vector<sparse::sparsify_candidate> plan = sparse::plan_sparsify(a.model, settings, sparse::dense_baseline_from(isa));
  nlohmann::json calibrated_section;
  if (calibrated && !o.dry_run) {
    // The blocks are chosen (and their layers' sparsities, when allocated) before the pass,
    // which then removes exactly the zeroed ones; the plan shows the sparsities chosen.
    pass->set_node_sparsity(calibrate_blocks(out, a.model, settings, plan, data, o, budget, level_errors, calibrated_section));
    plan = sparse::plan_sparsify(a.model, pass->settings(), sparse::dense_baseline_from(isa));
  }
  const std::int64_t rewrites = print_plan(out, o, settings, isa, plan);
  a.report = report_json(o, settings, isa, plan);
  if (!calibrated_section.is_null()) a.report["calibrated"] = calibrated_section;
  if (!o.dry_run) rewrite(out, std::move(pass), a.model, rewrites, a.report);
  return a;
}

/// sparsify_once printing into the attempt, for the searches: only the kept one is shown.
attempt sparsify_quietly(const sparsify_cli_options& o, const ir::model& original, const calibration_data& data,
                         const std::string& sparsity, const allocation& budget, std::vector<std::vector<double>>& level_errors) {
  std::ostringstream text;
  attempt a = sparsify_once(text, o, original, data, sparsity, budget, level_errors);
  a.printed = text.str();
  return a;
}

/// The run time the latency table predicts for an attempt: each sparsified layer's dense
/// time scaled by the kernel model at the sparsity it got.
double predicted_speedup(const nlohmann::json& report, const prune::node_timing& table) {
  const auto baseline = sparse::dense_baseline_from(runtime::dense_gemm_isa());
  double saved = 0.0;
  for (const auto& row : report["calibrated"]["layers"]) {
    const double s = row["blocks_removed"].get<double>() / std::max(1.0, row["blocks_total"].get<double>());
    if (s > 0.0 && row.contains("dense_ms")) saved += row["dense_ms"].get<double>() * (1.0 - 1.0 / sparse::predicted_speedup(s, baseline));
  }
  return table.run_ms / std::max(table.run_ms - saved, 1e-9);
}

/// `--target-speedup`: allocates sparsity by a latency table measured on the original model,
/// searched as prune's is (prune::search_speedup). Returns the attempt measured closest to
/// the target.
attempt search_speedup(const sparsify_cli_options& o, const ir::model& original, const calibration_data& data,
                       std::vector<std::vector<double>>& level_errors, nlohmann::json& section) {
  const runtime::tensor_map feeds = latency_batch(o.data, data, original, o.latency);
  const prune::node_timing table = prune::time_nodes(original, feeds, o.latency.threads);
  runtime::session reference(original, {.threads = o.latency.threads});
  std::optional<attempt> best;
  double best_miss = 0.0;
  std::vector<prune::latency_comparison> timings;
  const prune::speedup_search search = prune::search_speedup(o.latency.target_speedup, 0.05, 4, [&](double goal) {
    const allocation budget{table.node_ms, table.run_ms * (1.0 - 1.0 / goal)};
    attempt a = sparsify_quietly(o, original, data, o.sparsity, budget, level_errors);
    runtime::session candidate(a.model, {.threads = o.latency.threads});
    const prune::latency_comparison c = prune::compare_latency(reference, candidate, feeds, o.latency.rounds);
    const prune::speedup_attempt t{budget.saving_ms / table.run_ms, predicted_speedup(a.report, table), c.speedup};
    // Keep the attempt closest to the target so far (the search's own rule).
    const double miss = std::abs(t.measured / o.latency.target_speedup - 1.0);
    if (!best || miss < best_miss) {
      best = std::move(a);
      best_miss = miss;
    }
    timings.push_back(c);
    std::cout << "  attempt " << timings.size() << ": predicted " << std::fixed << std::setprecision(2) << t.predicted
              << "x, measured " << t.measured << "x\n" << std::defaultfloat;
    return t;
  });
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& t : search.attempts) attempts.push_back({{"predicted_speedup", t.predicted}, {"measured_speedup", t.measured}});
  const prune::speedup_attempt& kept = search.attempts[search.best];
  section = {{"target_speedup", o.latency.target_speedup}, {"threads", o.latency.threads}, {"run_ms", table.run_ms},
             {"predicted_speedup", kept.predicted}, {"measured_speedup", kept.measured},
             {"measured_run_ms", timings[search.best].candidate_ms}, {"measured_reference_ms", timings[search.best].reference_ms},
             {"attempts", attempts}};
  std::cout << "kept: predicted " << std::fixed << std::setprecision(2) << kept.predicted << "x, measured " << kept.measured
            << "x (" << timings[search.best].reference_ms << " -> " << timings[search.best].candidate_ms << " ms)\n" << std::defaultfloat;
  return std::move(*best);
}

/// `--max-cosine-drop`: the largest sparsity (bisected to 1/64) whose mean output cosine with
/// the original on the calibration batches stays within the drop; that probe's attempt (none
/// within it: sparsity 0, made then).
attempt search_cosine(const sparsify_cli_options& o, const ir::model& original, const calibration_data& data,
                      std::vector<std::vector<double>>& level_errors, nlohmann::json& section) {
  double lo = 0.0, hi = o.max_layer_sparsity;
  nlohmann::json probes = nlohmann::json::array();
  std::optional<attempt> kept;
  for (int i = 0; i < 6; ++i) {
    const double mid = 0.5 * (lo + hi);
    attempt a = sparsify_quietly(o, original, data, std::to_string(mid), {}, level_errors);
    const double cosine = agreement(original, a.model, data.calibration)["output_cosine"].get<double>();
    probes.push_back({{"sparsity", mid}, {"calibration_cosine", cosine}});
    std::cout << "  sparsity " << std::fixed << std::setprecision(3) << mid << ": calibration cosine " << std::setprecision(4)
              << cosine << "\n" << std::defaultfloat;
    if (1.0 - cosine <= o.max_cosine_drop) {
      lo = mid;
      kept = std::move(a);
    } else {
      hi = mid;
    }
  }
  section = {{"max_cosine_drop", o.max_cosine_drop}, {"sparsity", lo}, {"probes", probes}};
  return kept ? std::move(*kept) : sparsify_quietly(o, original, data, std::to_string(lo), {}, level_errors);
}

void check_sparsify_arguments(const sparsify_cli_options& o) {
  if (!o.dry_run && o.output.empty()) throw error(errc::invalid_argument, "give -o OUT, or --dry-run to write nothing");
  check_calibration_sources(o.data);
  if (o.chunk_rows < 1) throw error(errc::invalid_argument, "--chunk-rows must be at least 1");
  if (!(o.damping > 0.0)) throw error(errc::invalid_argument, "--damping must be positive");
  if (!(o.max_layer_sparsity > 0.0 && o.max_layer_sparsity <= 1.0)) throw error(errc::invalid_argument, "--max-layer-sparsity must be in (0, 1]");
  if (!o.criterion.empty() && o.criterion != "magnitude" && o.criterion != "obs" && o.criterion != "obs-greedy") {
    throw error(errc::invalid_argument, "--criterion must be magnitude, obs or obs-greedy, not '" + o.criterion + "'");
  }
  if (!o.criterion.empty() && o.criterion != "magnitude" && !o.data.given()) {
    throw error(errc::invalid_argument, "--criterion " + o.criterion + " chooses blocks on calibration data: give --calib-dir DIR or --calib-text FILE --tokenizer T");
  }
  const double target = o.latency.target_speedup;
  const bool searching = target != 0.0 || o.max_cosine_drop != 0.0;
  if (target != 0.0 && o.max_cosine_drop != 0.0) throw error(errc::invalid_argument, "give --target-speedup or --max-cosine-drop, not both");
  check_latency_options(o.latency, o.data);
  if (o.max_cosine_drop != 0.0 && !(o.max_cosine_drop > 0.0 && o.max_cosine_drop < 1.0)) {
    throw error(errc::invalid_argument, "--max-cosine-drop must be in (0, 1)");
  }
  if (searching && (!o.data.given() || o.criterion == "magnitude" || o.dry_run)) {
    throw error(errc::invalid_argument, "--target-speedup and --max-cosine-drop measure the sparsified model: give calibration data, not --criterion magnitude or --dry-run");
  }
  if (o.permute && (!o.data.given() || o.criterion == "magnitude")) {
    throw error(errc::invalid_argument, "--permute orders units by their output energy on calibration data: give --calib-dir or --calib-text, not --criterion magnitude");
  }
  if (o.sensitivity && (o.uniform || !o.data.given() || o.criterion == "magnitude")) {
    throw error(errc::invalid_argument, "--sensitivity measures each layer on calibration data to allocate sparsity: give --calib-dir or --calib-text, not --uniform or --criterion magnitude");
  }
  if (target != 0.0 && o.uniform) throw error(errc::invalid_argument, "--target-speedup allocates sparsity per layer: not with --uniform");
  if ((o.sequential || o.residual_target) && (!o.data.given() || o.criterion == "magnitude")) {
    throw error(errc::invalid_argument, "--sequential and --residual-target refit on calibration data: give --calib-dir or --calib-text, not --criterion magnitude");
  }
}

int run_sparsify(const sparsify_cli_options& o) {
  check_sparsify_arguments(o);
  if (!o.output.empty()) refuse_overwrite(o.input, o.output);
  {
    // Option values are checked before the model is read.
    sparse::sparsify_blocks probe;
    probe.set_option("block", o.block);
    probe.set_option("sparsity", o.sparsity);
    probe.set_option("min-size", o.min_size);
    probe.set_option("norm", o.norm);
  }
  probe_writable({o.dry_run ? std::string() : o.output, o.report});

  ir::model original = load_checked(o.input);
  const calibration_data data = o.dry_run ? calibration_data{} : read_calibration(o.data, original);
  // Reordering changes no output, so it is done once, before any attempt chooses blocks.
  const bool permuting = o.permute && !o.dry_run;
  const std::size_t permuted = permuting ? prune::sort_units_by_output_energy(original, data.calibration) : 0;
  std::vector<std::vector<double>> level_errors;
  nlohmann::json search;
  std::optional<attempt> result;
  if (o.latency.target_speedup != 0.0) {
    std::cout << "searching block sparsity for a measured " << o.latency.target_speedup << "x (executor, " << o.latency.threads
              << " thread(s)):\n";
    result = search_speedup(o, original, data, level_errors, search);
  } else if (o.max_cosine_drop != 0.0) {
    std::cout << "searching the largest sparsity within a cosine drop of " << o.max_cosine_drop << " on the calibration batches:\n";
    result = search_cosine(o, original, data, level_errors, search);
  } else {
    result = sparsify_once(std::cout, o, original, data, o.sparsity, allocation{}, level_errors);
  }
  if (permuting) {
    std::cout << "reordered the units of " << permuted << " FFN/attention group(s) by output energy before choosing blocks\n";
  }
  std::cout << result->printed;
  nlohmann::json& report = result->report;
  if (report.contains("calibrated")) report["calibrated"]["permuted_groups"] = permuted;
  if (!search.is_null()) report[o.latency.target_speedup != 0.0 ? "latency" : "cosine_budget"] = search;
  if (o.dry_run) {
    write_report(o.report, report);
    std::cout << "dry run: no model written\n";
    return 0;
  }
  if (o.data.given()) report["agreement"] = report_agreement(data, original, result->model);
  write_report(o.report, report);
  save_and_announce(result->model, o.output);
  return 0;
}

void declare_sparsify(CLI::App& sub, sparsify_cli_options& o) {
  sub.add_option("model", o.input, "Input ONNX model")->required();
  sub.add_option("-o,--output", o.output, "Output ONNX model (not with --dry-run)");
  sub.add_option("--block", o.block, "Block shape RxC on the weight as used, [K, N], extents 1..64 (default 16x16)");
  sub.add_option("--sparsity", o.sparsity, "Fraction of each weight's blocks removed, in [0, 1] (default 0.75)");
  sub.add_option("--min-size", o.min_size, "Skip weights with fewer elements (default 65536)");
  sub.add_option("--norm", o.norm, "Block magnitude: l1 or l2 (default l2)");
  declare_calibration_options(sub, o.data,
                              "Calibration batches (test-data subfolders or one .pb per batch): choose blocks by their effect on each layer's output and update the kept weights (SparseGPT-style); measure agreement");
  sub.add_option("--criterion", o.criterion,
                 "magnitude (block norm), obs (calibrated: output error, kept weights updated in one pass over the rows) or obs-greedy "
                 "(calibrated: blocks removed one at a time per block column, every kept weight refit exactly; slower, lower error); "
                 "default obs with calibration data, else magnitude");
  sub.add_option("--chunk-rows", o.chunk_rows, "With calibration data: input rows whose blocks are chosen together (default 128)");
  sub.add_option("--damping", o.damping,
                 "With calibration data: added to the input moments' diagonal, relative to its mean (default 0.01; larger generalises better from few calibration rows)");
  sub.add_option("--max-layer-sparsity", o.max_layer_sparsity,
                 "With calibration data, allocated: the most any one layer loses, rounded down to sixteenths (default 0.9375)");
  sub.add_flag("--uniform", o.uniform,
               "With calibration data: the same sparsity in every layer (default: per layer, where the measured output error grows least, --sparsity of the weights overall)");
  sub.add_flag("--sensitivity", o.sensitivity,
               "With calibration data, allocated: sparsify each layer alone at eighths of sparsity, measure the drop of the output's mean cosine on the first 64 calibration batches, and allocate where the summed drops grow least (default: by each layer's own output error)");
  sub.add_flag("--permute", o.permute,
               "With calibration data: first reorder each transformer FFN's neurons and each attention layer's heads by the output energy they add (the function is unchanged), so the least important share blocks");
  sub.add_flag("--sequential", o.sequential,
               "With calibration data: layer after layer, each on the activations the sparsified layers before it produce, towards the original outputs");
  sub.add_flag("--residual-target", o.residual_target,
               "Sequential, towards the original residual sum where a layer's output is added to one, so each layer also makes up for the error the stream carries (implies --sequential)");
  declare_latency_options(sub, o.latency,
                          "With calibration data: allocate sparsity per layer to reach this speedup, measured in the executor (a per-layer latency table, corrected by measurement)");
  sub.add_option("--max-cosine-drop", o.max_cosine_drop,
                 "With calibration data: the largest sparsity whose mean output cosine with the original on the calibration batches drops by at most this (per-layer allocation)");
  sub.add_flag("--dry-run", o.dry_run, "Print what would be rewritten and the predicted speedups; write no model");
  sub.add_option("--report", o.report, "Write a JSON report (every MatMul/Gemm: shape, blocks, speedup or reason declined)");
}

}  // namespace

command add_sparsify(CLI::App& app) {
  return make_command(app, "sparsify",
                      "Prune constant MatMul/Gemm weights to block sparsity and run them as inferopt.BlockSparseMatMul "
                      "(changes numbers)",
                      declare_sparsify, run_sparsify);
}

}  // namespace inferopt::cli
