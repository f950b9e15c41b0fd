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
#include <sstream>

#include "calibration_data.hpp"
#include "commands.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
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
  std::string criterion;  // magnitude or obs; default obs with calibration data, else magnitude
  std::int64_t chunk_rows = 128;
  bool uniform = false;
  bool sequential = false;
  bool dry_run = false;
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

void print_table(const std::vector<sparse::sparsify_candidate>& plan) {
  std::vector<const sparse::sparsify_candidate*> rows;
  std::size_t name_width = 4;
  for (const auto& c : plan) {
    if (!c.declined.empty()) continue;
    rows.push_back(&c);
    name_width = std::max(name_width, c.node.size());
  }
  if (rows.empty()) return;
  std::cout << std::left << std::setw(static_cast<int>(name_width + 2)) << "node" << std::setw(8) << "op"
            << std::setw(16) << "weight K x N" << std::setw(20) << "blocks kept" << std::setw(10) << "sparsity"
            << std::setw(6) << "relu" << "predicted speedup\n";
  for (const sparse::sparsify_candidate* c : rows) {
    std::ostringstream weight, blocks;
    weight << c->k << " x " << c->n;
    blocks << c->blocks_kept << " / " << c->blocks_total;
    std::cout << std::left << std::setw(static_cast<int>(name_width + 2)) << c->node << std::setw(8) << c->op_type
              << std::setw(16) << weight.str() << std::setw(20) << blocks.str() << std::setw(10)
              << percent_text(c->block_sparsity) << std::setw(6) << (c->fuses_relu ? "yes" : "no")
              << speedup_text(c->predicted_speedup) << "\n";
  }
}

nlohmann::json report_json(const sparsify_cli_options& o, const sparse::sparsify_options& settings,
                           const std::string& baseline, const std::vector<sparse::sparsify_candidate>& plan) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& c : plan) {
    nodes.push_back({{"node", c.node},
                     {"op", c.op_type},
                     {"k", c.k},
                     {"n", c.n},
                     {"transposed", c.transposed},
                     {"rewritten", c.declined.empty()},
                     {"declined", c.declined.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.declined)},
                     {"blocks_total", c.blocks_total},
                     {"blocks_kept", c.blocks_kept},
                     {"block_sparsity", c.block_sparsity},
                     {"relu_fused", c.fuses_relu},
                     {"predicted_speedup", c.declined.empty() && std::isfinite(c.predicted_speedup)
                                               ? nlohmann::json(c.predicted_speedup)
                                               : nlohmann::json(nullptr)}});
  }
  return {{"model", o.input},
          {"output", o.dry_run ? nlohmann::json(nullptr) : nlohmann::json(o.output)},
          {"dry_run", o.dry_run},
          {"block", {settings.block.rows, settings.block.cols}},
          {"sparsity", settings.sparsity},
          {"min_size", settings.min_size},
          {"norm", settings.norm == sparse::block_norm::l1 ? "l1" : "l2"},
          {"criterion", o.data.given() && o.criterion != "magnitude" ? "obs" : "magnitude"},
          {"dense_baseline_isa", baseline},
          {"nodes", nodes}};
}

/// Prints the settings, the table and the counts of the plan; returns how many products it
/// rewrites.
std::int64_t print_plan(const sparsify_cli_options& o, const sparse::sparsify_options& settings, const std::string& isa,
                        const std::vector<sparse::sparsify_candidate>& plan) {
  std::map<std::string, int> declined;
  std::int64_t rewrites = 0, products = 0;
  for (const auto& c : plan) {
    ++products;
    if (c.declined.empty()) ++rewrites;
    else ++declined[c.declined];
  }

  std::cout << "sparsify-blocks: block " << settings.block.rows << "x" << settings.block.cols << ", sparsity "
            << settings.sparsity << ", min-size " << settings.min_size << ", norm "
            << (settings.norm == sparse::block_norm::l1 ? "l1" : "l2") << (o.dry_run ? " (dry run)" : "") << "\n";
  print_table(plan);
  std::cout << rewrites << " of " << products << " MatMul/Gemm node(s) " << (o.dry_run ? "would be rewritten" : "rewritten")
            << " to inferopt.BlockSparseMatMul";
  if (!declined.empty()) {
    std::cout << "; declined:";
    for (const auto& [why, count] : declined) std::cout << " " << why << " " << count;
  }
  std::cout << "\n";
  if (rewrites > 0) {
    std::cout << "predicted speedup: e(s) / (1 - s) fitted to docs/BENCHMARKS.md, against a dense GEMM built for "
              << (sparse::dense_baseline_from(isa) == sparse::dense_baseline::avx512 ? "AVX-512" : "AVX2")
              << " (the executor's here: " << isa << "); a model, not a measurement (see `inferopt bench`)\n";
  }
  return rewrites;
}

/// Runs the pass (verified) and checks it rewrote what the plan said; adds the statistics
/// and counters to the report.
void rewrite(std::unique_ptr<sparse::sparsify_blocks> pass, ir::model& m, std::int64_t rewrites, nlohmann::json& report) {
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
  std::cout << "params " << human_count(before.params) << " -> " << human_count(after.params) << " ("
            << human_bytes(before.param_bytes) << " -> " << human_bytes(after.param_bytes) << ")\n";
  report["before"] = to_json(before);
  report["after"] = to_json(after);
  report["counters"] = r.passes[0].counters;
}

/// Chooses and updates the blocks of every product the plan rewrites from the calibration
/// data; prints and reports each layer's output error against magnitude alone.
/// Returns each layer's sparsity (they differ when `allocate`); `report` becomes the report's
/// "calibrated" section.
std::map<std::string, double> calibrate_blocks(ir::model& m, const sparse::sparsify_options& settings,
                                               const std::vector<sparse::sparsify_candidate>& plan, const calibration_data& data,
                                               std::int64_t chunk_rows, bool allocate, bool sequential, nlohmann::json& report) {
  std::vector<const ir::node*> layers;
  for (const auto& c : plan) {
    if (c.declined.empty()) layers.push_back(c.at);
  }
  prune::block_sparsity_options options;
  options.block_rows = settings.block.rows;
  options.block_cols = settings.block.cols;
  options.sparsity = settings.sparsity;
  options.chunk_rows = chunk_rows;
  options.allocate = allocate;
  options.sequential = sequential;
  const std::vector<prune::block_sparsity_layer> done = prune::apply_calibrated_block_sparsity(m, layers, data.calibration, options);
  std::size_t width = 5;
  for (const auto& l : done) width = std::max(width, l.node.size());
  std::cout << "calibrated blocks (" << data.calibration.size() << " batch(es); relative output error on the calibration rows):\n"
            << std::left << std::setw(static_cast<int>(width + 2)) << "layer" << std::setw(14) << "by magnitude" << std::setw(14)
            << "calibrated" << std::setw(10) << "sparsity" << "bias\n";
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, double> sparsity;
  for (const auto& l : done) {
    const double s = static_cast<double>(l.result.blocks_removed) / static_cast<double>(std::max<std::int64_t>(l.result.blocks_total, 1));
    sparsity[l.node] = s;
    std::ostringstream mag, cal;
    mag << std::setprecision(4) << l.result.relative_error_magnitude;
    cal << std::setprecision(4) << l.result.relative_error;
    std::cout << std::left << std::setw(static_cast<int>(width + 2)) << l.node << std::setw(14) << mag.str() << std::setw(14) << cal.str()
              << std::setw(10) << percent_text(s) << (l.bias_updated ? "updated" : "none") << "\n";
    rows.push_back({{"node", l.node}, {"blocks_total", l.result.blocks_total}, {"blocks_removed", l.result.blocks_removed},
                    {"relative_error_magnitude", l.result.relative_error_magnitude}, {"relative_error", l.result.relative_error},
                    {"bias_updated", l.bias_updated}});
  }
  report = {{"batches", data.calibration.size()}, {"chunk_rows", chunk_rows}, {"allocated", allocate}, {"sequential", sequential}, {"layers", rows}};
  return sparsity;
}

int run_sparsify(const sparsify_cli_options& o) {
  if (!o.dry_run && o.output.empty()) throw error(errc::invalid_argument, "give -o OUT, or --dry-run to write nothing");
  check_calibration_sources(o.data);
  if (o.chunk_rows < 1) throw error(errc::invalid_argument, "--chunk-rows must be at least 1");
  if (!o.criterion.empty() && o.criterion != "magnitude" && o.criterion != "obs") {
    throw error(errc::invalid_argument, "--criterion must be magnitude or obs, not '" + o.criterion + "'");
  }
  if (o.criterion == "obs" && !o.data.given()) {
    throw error(errc::invalid_argument, "--criterion obs chooses blocks on calibration data: give --calib-dir DIR or --calib-text FILE --tokenizer T");
  }
  const bool calibrated = o.data.given() && o.criterion != "magnitude";
  if (!o.output.empty()) refuse_overwrite(o.input, o.output);
  // The pass checks and keeps the options, so the plan and the rewrite read the same ones.
  auto pass = std::make_unique<sparse::sparsify_blocks>();
  pass->set_option("block", o.block);
  pass->set_option("sparsity", o.sparsity);
  pass->set_option("min-size", o.min_size);
  pass->set_option("norm", o.norm);
  const sparse::sparsify_options settings = pass->settings();
  probe_writable({o.dry_run ? std::string() : o.output, o.report});

  ir::model m = load_checked(o.input);
  const std::string isa = runtime::dense_gemm_isa();
  std::vector<sparse::sparsify_candidate> plan = sparse::plan_sparsify(m, settings, sparse::dense_baseline_from(isa));
  const ir::model original = o.data.given() ? m.clone() : ir::model{};
  const calibration_data data = o.dry_run ? calibration_data{} : read_calibration(o.data, m);
  nlohmann::json calibrated_section;
  if (calibrated && !o.dry_run) {
    // The blocks are chosen (and their layers' sparsities, when allocated) before the pass,
    // which then removes exactly the zeroed ones; the plan shows the sparsities chosen.
    pass->set_node_sparsity(calibrate_blocks(m, settings, plan, data, o.chunk_rows, !o.uniform, o.sequential, calibrated_section));
    plan = sparse::plan_sparsify(m, pass->settings(), sparse::dense_baseline_from(isa));
  }
  const std::int64_t rewrites = print_plan(o, settings, isa, plan);
  nlohmann::json report = report_json(o, settings, isa, plan);
  if (!calibrated_section.is_null()) report["calibrated"] = calibrated_section;
  if (o.dry_run) {
    write_report(o.report, report);
    std::cout << "dry run: no model written\n";
    return 0;
  }
  rewrite(std::move(pass), m, rewrites, report);
  if (o.data.given()) report["agreement"] = report_agreement(data, original, m);
  write_report(o.report, report);
  save_and_announce(m, o.output);
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
                 "magnitude (block norm) or obs (calibrated: output error, kept weights updated); default obs with calibration data, else magnitude");
  sub.add_option("--chunk-rows", o.chunk_rows, "With calibration data: input rows whose blocks are chosen together (default 128)");
  sub.add_flag("--uniform", o.uniform,
               "With calibration data: the same sparsity in every layer (default: per layer, where the measured output error grows least, --sparsity of the weights overall)");
  sub.add_flag("--sequential", o.sequential,
               "With calibration data: layer after layer, each on the activations the sparsified layers before it produce, towards the original outputs");
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
