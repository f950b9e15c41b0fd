// `inferopt sparsify MODEL -o OUT [--block RxC] [--sparsity S] [--min-size N] [--norm l1|l2]
// [--dry-run] [--report FILE.json]`: the `sparsify-blocks` pass with a table of what it
// rewrites and the predicted speedup of each product.

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
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

int run_sparsify(const sparsify_cli_options& o) {
  if (!o.dry_run && o.output.empty()) throw error(errc::invalid_argument, "give -o OUT, or --dry-run to write nothing");
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
  const std::vector<sparse::sparsify_candidate> plan =
      sparse::plan_sparsify(m, settings, sparse::dense_baseline_from(isa));
  const std::int64_t rewrites = print_plan(o, settings, isa, plan);
  nlohmann::json report = report_json(o, settings, isa, plan);
  if (o.dry_run) {
    write_report(o.report, report);
    std::cout << "dry run: no model written\n";
    return 0;
  }
  rewrite(std::move(pass), m, rewrites, report);
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
