// `inferopt optimize MODEL -o OUT [-O0..-O3 | --passes PIPELINE] ...` and `inferopt passes`.

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>

#include "commands.hpp"
#include "input_options.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

struct optimize_options {
  std::string input;
  std::string output;
  int level = -1;
  std::string passes;
  std::vector<std::string> disabled;
  std::string report;
  bool print_after_change = false;
  bool verify_each = false;
  bool in_place = false;
  std::int64_t external_threshold = -1;
  ir::value_info_policy value_info = ir::value_info_policy::every_known_type;
  bool verify = false;
  bool bisect = false;
  input_options inputs;
  numeric_tolerance tolerance;
  int threads = 0;
};

/// Equal paths count too, whether or not the files exist yet.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return is_same_file(a, b) || fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

void print_table(const run_report& r) {
  std::cout << std::left << std::setw(22) << "pass" << std::right << std::setw(6) << "runs" << std::setw(10) << "ms"
            << std::setw(18) << "nodes" << std::setw(10) << "rewrites" << "\n";
  for (const pass_record& p : r.passes) {
    std::ostringstream nodes;
    nodes << p.nodes_before << " -> " << p.nodes_after;
    std::cout << std::left << std::setw(22) << p.name << std::right << std::setw(6) << p.runs << std::setw(10)
              << std::fixed << std::setprecision(2) << p.milliseconds << std::setw(18) << nodes.str() << std::setw(10)
              << p.rewrites << "\n";
  }
  for (const fixpoint_record& f : r.fixpoints) {
    std::cout << f.text << ": " << f.iterations << " iteration(s), " << (f.converged ? "converged" : "NOT converged (cap)")
              << "\n";
  }
}

nlohmann::json report_json(const optimize_options& o, const std::string& pipeline_text, const run_report& r,
                           const ir::model_statistics& before, const ir::model_statistics& after) {
  nlohmann::json report{{"model", o.input}, {"output", o.output}, {"pipeline", pipeline_text}};
  report.update(to_json(r));
  report["before"] = to_json(before);
  report["after"] = to_json(after);
  return report;
}

/// The pipeline the options name; unknown pass names are reported with suggestions.
pipeline pipeline_of(const optimize_options& o) {
  if (!o.passes.empty() && o.level >= 0) throw error(errc::invalid_argument, "give either -O or --passes, not both");
  const pass_registry registry = builtin_registry();
  pipeline_parse_options parse_options;
  for (const auto& d : o.disabled) {
    (void)registry.create(d);  // reports unknown names with suggestions
    parse_options.disabled.insert(d);
  }
  return o.passes.empty() ? level_pipeline(o.level < 0 ? 1 : o.level, registry, parse_options)
                          : parse_pipeline(o.passes, registry, parse_options);
}

/// What --verify and --bisect compare against: the model before any pass, and its feeds.
struct numeric_reference {
  ir::model original;
  runtime::tensor_map feeds;
};

/// Taken before any pass touches the graph; the feeds are checked against the model then,
/// so that bad inputs fail before the pipeline runs.
std::optional<numeric_reference> reference_of(const optimize_options& o, const ir::model& m) {
  if (!o.verify && !o.bisect) return std::nullopt;
  const runtime::session probe(m, runtime::session_options{.threads = o.threads});
  runtime::tensor_map feeds = o.inputs.gather(probe);
  probe.check_inputs(feeds);
  return numeric_reference{m.clone(), std::move(feeds)};
}

void print_summary(const pipeline& p, const run_report& r, const ir::model_statistics& before,
                   const ir::model_statistics& after) {
  std::cout << "pipeline: " << (p.steps.empty() ? "(none)" : p.to_string()) << "\n";
  print_table(r);
  std::cout << "nodes " << before.nodes << " -> " << after.nodes << ", params " << human_count(before.params) << " -> "
            << human_count(after.params) << " (" << human_bytes(before.param_bytes) << " -> "
            << human_bytes(after.param_bytes) << "), MACs " << human_count(before.macs) << " -> "
            << human_count(after.macs) << ", " << std::fixed << std::setprecision(1) << r.milliseconds << " ms\n"
            << std::defaultfloat;
}

/// --verify: the original and the optimized model on the same feeds; returns whether every
/// output is within tolerance.
bool verify_outputs(const optimize_options& o, const numeric_reference& ref, const ir::model& m, nlohmann::json& report) {
  const numeric_comparison c = compare_models(ref.original, m, ref.feeds, o.tolerance, o.threads);
  std::cout << "verify: original vs optimized on " << o.inputs.describe() << "\n";
  const bool match = print_differences(c.outputs, o.tolerance.rtol, o.tolerance.atol);
  report["verify"] = {{"inputs", o.inputs.describe()}, {"rtol", o.tolerance.rtol}, {"atol", o.tolerance.atol},
                      {"outputs", to_json(c.outputs)}, {"match", match}};
  return match;
}

void report_bisect(const optimize_options& o, const numeric_bisect& bisect, nlohmann::json& report) {
  if (const auto& d = bisect.first_divergence()) {
    std::cout << "bisect: outputs first differ after pass '" << d->pass << "' (its run " << d->run << "; "
              << d->checks << " changing pass runs checked)\n";
    print_differences(d->comparison.outputs, o.tolerance.rtol, o.tolerance.atol);
    report["bisect"] = {{"first_pass", d->pass}, {"run", d->run}, {"checks", d->checks},
                        {"outputs", to_json(d->comparison.outputs)}};
  } else {
    std::cout << "bisect: no pass moved an output beyond tolerance (" << bisect.checks() << " pass runs checked)\n";
    report["bisect"] = {{"first_pass", nullptr}, {"checks", bisect.checks()}};
  }
}

int run_optimize(const optimize_options& o) {
  const fs::path in = o.input;
  const fs::path out = o.output;
  if (same_file(in, out) && !o.in_place) {
    throw error(errc::invalid_argument, out.string() + ": output would overwrite the input; pass --in-place to allow it");
  }
  pipeline p = pipeline_of(o);
  probe_writable({out, o.report});

  ir::model m = load_checked(in);
  const ir::model_statistics before = statistics_of(m);
  pass_manager manager;
  if (o.verify_each) manager.add_instrumentation(std::make_unique<verify_each>());
  if (o.print_after_change) manager.add_instrumentation(std::make_unique<print_after_change>(std::cout));
  const std::optional<numeric_reference> reference = reference_of(o, m);
  numeric_bisect* bisect = nullptr;
  if (o.bisect) {
    auto b = std::make_unique<numeric_bisect>(m, reference->feeds, o.tolerance, o.threads);
    bisect = b.get();
    manager.add_instrumentation(std::move(b));
  }
  const run_report r = manager.run(p, m);
  ir::verify(m.graph());
  const ir::model_statistics after = statistics_of(m);
  print_summary(p, r, before, after);

  nlohmann::json report = report_json(o, p.to_string(), r, before, after);
  const bool outputs_match = !reference || verify_outputs(o, *reference, m, report);
  if (bisect) report_bisect(o, *bisect, report);
  write_report(o.report, report);
  if (!outputs_match) {
    throw error(errc::verification, "optimized outputs differ from the original beyond tolerance; " + out.string() +
                                        " not written" + (o.bisect ? "" : " (--bisect names the pass)"));
  }

  ir::save_options save;
  save.value_info = o.value_info;
  if (o.external_threshold >= 0) save.external_data_threshold = static_cast<std::size_t>(o.external_threshold);
  save_and_announce(m, out, save);
  return 0;
}

void declare_optimize(CLI::App& sub, optimize_options& o) {
  add_model_and_output(sub, o.input, o.output);
  sub.add_option("-O", o.level, "Optimization level 0..3 (default 1), e.g. -O2")->check(CLI::Range(0, 3));
  sub.add_option("--passes", o.passes, "Pipeline text, e.g. 'dce,fixpoint(eliminate-identity,dce)'");
  sub.add_option("--disable-pass", o.disabled, "Leave this pass out of the pipeline (repeatable)");
  sub.add_option("--report", o.report, "Write a JSON report to this file");
  sub.add_flag("--print-after-change", o.print_after_change, "Print the graph after every pass that changed it");
  sub.add_flag("--verify-each", o.verify_each, "Verify the graph's structure after every pass");
  sub.add_flag("--in-place", o.in_place, "Allow the output to overwrite the input");
  sub.add_option("--external-data-threshold", o.external_threshold,
                 "Write tensors of at least this many bytes to <output>.data");
  const std::map<std::string, ir::value_info_policy> value_info_policies{
      {"as-loaded", ir::value_info_policy::as_loaded}, {"all", ir::value_info_policy::every_known_type}};
  sub.add_option("--value-info", o.value_info,
                 "Intermediate types to list in the output: all (default; every inferred type) or as-loaded (only the "
                 "input's entries, refreshed: onnxruntime then fuses the output as it did the input)")
      ->transform(CLI::CheckedTransformer(value_info_policies, CLI::ignore_case));
  sub.add_flag("--verify", o.verify,
                "Run original and optimized models on the same inputs and print max abs/rel error per output; "
                "fail (nothing written) beyond tolerance");
  sub.add_flag("--bisect", o.bisect, "Check outputs after every pass run; name the first pass that changed them (implies --verify)");
  o.inputs.add_to(sub);
  sub.add_option("--rtol", o.tolerance.rtol, "Relative tolerance for --verify/--bisect (default 1e-4)");
  sub.add_option("--atol", o.tolerance.atol, "Absolute tolerance for --verify/--bisect (default 1e-5)");
  sub.add_option("--threads", o.threads, "Executor threads for --verify/--bisect (default: all cores)");
}

struct fp16_options {
  optimize_options o;
  bool float16_io = false;
  std::vector<std::string> block_ops;
  std::vector<std::string> block_nodes;
};

void declare_fp16(CLI::App& sub, fp16_options& st) {
  add_model_and_output(sub, st.o.input, st.o.output);
  sub.add_flag("--float16-io", st.float16_io,
               "Make graph inputs/outputs float16 too (default: they stay float32, i.e. --keep-io-types)");
  sub.add_flag("--keep-io-types", [&st](std::int64_t) { st.float16_io = false; }, "Keep graph inputs/outputs float32 (default)");
  sub.add_option("--block-ops", st.block_ops, "Op types to keep in float32, added to the default list (repeatable)")
      ->delimiter(',');
  sub.add_option("--block-nodes", st.block_nodes, "Node names to keep in float32 (repeatable)")->delimiter(',');
  sub.add_option("--report", st.o.report, "Write a JSON report to this file");
}

int run_fp16(const fp16_options& st) {
  optimize_options o = st.o;
  o.passes = tooling::fp16_pipeline_text(!st.float16_io, st.block_ops, st.block_nodes);
  return run_optimize(o);
}

}  // namespace

command add_optimize(CLI::App& app) {
  return make_command(app, "optimize", "Run a pass pipeline over a model and save the result", declare_optimize,
                      run_optimize);
}

command add_fp16(CLI::App& app) {
  return make_command(app, "fp16", "Run a model's float32 computation in float16 (pass to-fp16), Casts at the boundaries",
                      declare_fp16, run_fp16);
}

command add_passes(CLI::App& app) {
  auto* sub = app.add_subcommand("passes", "List the registered passes and -O levels");
  return {sub, [] {
            const pass_registry registry = builtin_registry();
            std::cout << "passes:\n";
            for (const auto* e : registry.passes()) {
              std::cout << "  " << std::left << std::setw(22) << e->name << e->description << "\n";
            }
            std::cout << "levels:\n";
            for (const auto* p : registry.pipelines()) {
              std::cout << "  -" << std::left << std::setw(4) << p->name << p->description << "\n"
                        << "        " << (p->text.empty() ? "(no passes)" : p->text) << "\n";
            }
            return 0;
          }};
}

}  // namespace inferopt::cli
