// `inferopt quantize`: calibrate on sample inputs, insert QDQ, and write the range table and
// a TensorRT calibration cache from the same calibration; report per-tensor SQNR and fall
// back to float where top-1 agreement would drop under the budget.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "inferopt/core/atomic_file.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/range_json.hpp"
#include "inferopt/quant/trt_calibration_cache.hpp"
#include "inferopt/runtime/inputs.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

struct quantize_options {
  std::string input;
  std::string output;
  std::string calib_dir;
  int calib_random = 0;
  std::uint64_t seed = 0;
  std::string method = "entropy";
  double percentile = 99.99;
  bool per_tensor = false;
  std::string activation = "s8";
  std::vector<std::string> exclude;
  std::string trt_cache;
  std::string ranges;
  std::string report;
  std::string save_state;
  std::vector<std::string> merge_states;
  std::string validation_dir;
  double min_agreement = 0.99;
  bool no_fallback = false;
  int level = 2;
  int threads = 0;
};

quant::activation_scheme scheme_of(const std::string& s) {
  if (s == "s8") return quant::activation_scheme::int8_symmetric;
  if (s == "u8") return quant::activation_scheme::uint8_asymmetric;
  throw error(errc::invalid_argument, "--activation must be s8 or u8, got '" + s + "'");
}

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// -O<level> on the float model first: BatchNormalization folded into Conv and Relu kept
/// next to its producer are what QDQ placement and int8 kernels expect.
void prepare(ir::model& m, int level) {
  if (level <= 0) return;
  pipeline p = level_pipeline(std::min(level, 2), builtin_registry());
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  (void)manager.run(p, m);
}

int run_quantize(const quantize_options& o) {
  if (fs::exists(o.output) && fs::equivalent(o.input, o.output)) {
    throw error(errc::invalid_argument, o.output + ": output would overwrite the input");
  }
  if (o.calib_dir.empty() == (o.calib_random <= 0) && o.merge_states.empty()) {
    throw error(errc::invalid_argument, "give --calib-dir DIR or --calib-random N (or --merge-state files)");
  }
  { atomic_file probe(o.output); }
  for (const std::string& extra : {o.trt_cache, o.ranges, o.report, o.save_state}) {
    if (!extra.empty()) { atomic_file probe(extra); }
  }

  ir::model m = load_checked(o.input);
  prepare(m, o.level);
  const ir::model float_model = m.clone();
  runtime::session probe(m, runtime::session_options{.threads = 1});

  std::vector<runtime::tensor_map> batches;
  if (!o.calib_dir.empty()) batches = batches_from_dir(probe, o.calib_dir);
  for (int k = 0; k < o.calib_random; ++k) batches.push_back(runtime::random_inputs(probe, o.seed + k));

  quant::calibrate_options calib;
  calib.calibrator.method = quant::parse_calibration_method(o.method);
  calib.calibrator.percentile = o.percentile;
  calib.calibrator.symmetric = o.activation == "s8";
  calib.threads = o.threads;
  calib.on_progress = [](std::size_t done, std::size_t total) {
    print_progress(static_cast<std::int64_t>(done), static_cast<std::int64_t>(total));
  };
  quant::calibration_state state;
  quant::range_table ranges;
  if (!batches.empty()) {
    std::cout << "calibrating on " << batches.size() << " batch(es), method " << o.method << "\n";
    quant::calibration_result calibrated = quant::calibrate(m, batches, calib);
    state = std::move(calibrated.state);
    ranges = std::move(calibrated.ranges);
  }
  for (const std::string& path : o.merge_states) state.merge(quant::calibration_state::parse(read_binary(path)));
  if (!o.save_state.empty()) write_file_atomically(o.save_state, state.serialize());
  // Merged shards change the statistics, so their ranges are computed again.
  if (!o.merge_states.empty()) ranges = quant::compute_ranges(state, calib.calibrator);

  quant::qdq_options q;
  q.weights = o.per_tensor ? quant::weight_granularity::per_tensor : quant::weight_granularity::per_channel;
  q.activations = scheme_of(o.activation);
  for (const std::string& e : o.exclude) {
    // An op type starts with a capital letter (Conv, Gemm); anything else names a node.
    (!e.empty() && std::isupper(static_cast<unsigned char>(e[0])) && e.find_first_of("/:._0123456789") == std::string::npos
         ? q.exclude_op_types
         : q.exclude_nodes)
        .push_back(e);
  }
  quant::qdq_report qdq;
  auto quantize_with = [&](const std::vector<std::string>& excluded) {
    ir::model copy = float_model.clone();
    quant::qdq_options with = q;
    with.exclude_nodes.insert(with.exclude_nodes.end(), excluded.begin(), excluded.end());
    qdq = quant::quantize_qdq(copy, ranges, with);
    return copy;
  };

  // SQNR and the fallback run both models per batch: a few calibration batches suffice
  // unless the user names a validation set.
  constexpr std::size_t default_validation_batches = 8;
  std::vector<runtime::tensor_map> validation =
      o.validation_dir.empty()
          ? std::vector<runtime::tensor_map>(batches.begin(),
                                             batches.begin() + static_cast<std::ptrdiff_t>(std::min(batches.size(), default_validation_batches)))
          : batches_from_dir(probe, o.validation_dir);
  if (validation.empty()) validation.push_back(runtime::random_inputs(probe, o.seed));
  quant::fallback_options budget;
  budget.min_top1_agreement = o.no_fallback ? 0.0 : o.min_agreement;
  quant::fallback_result fallback = quant::fall_back_to_float(float_model, quantize_with, validation, budget);
  ir::model out = std::move(fallback.quantized);  // `qdq` describes it: it was built last
  ir::verify(out.graph());

  std::cout << "quantized " << qdq.nodes_quantized << " nodes (" << qdq.activations_quantized << " activations, "
            << qdq.weights_quantized << " weights " << (q.weights == quant::weight_granularity::per_channel && !qdq.per_tensor_fallback ? "per channel" : "per tensor")
            << ", " << qdq.biases_quantized << " int32 biases); opset " << qdq.opset
            << (qdq.opset_raised ? " (raised for per-axis scales)" : "") << "\n";
  for (const std::string& line : qdq.skipped) std::cout << "  left in float: " << line << "\n";
  const quant::quantization_error& err = fallback.final_error;
  std::cout << "top-1 agreement with float: " << std::fixed << std::setprecision(2) << 100.0 * err.top1_agreement
            << "% on " << err.samples << " sample(s)" << (o.no_fallback ? "" : ", budget " + std::to_string(o.min_agreement * 100).substr(0, 5) + "%")
            << (fallback.budget_met || o.no_fallback ? "" : " (NOT met)") << "\n";
  if (!fallback.excluded_nodes.empty()) {
    std::cout << "fallback to float (worst SQNR first):";
    for (const std::string& n : fallback.excluded_nodes) std::cout << " " << n;
    std::cout << "\n";
  }
  std::vector<const quant::tensor_sqnr*> worst;
  for (const auto& t : err.tensors) worst.push_back(&t);
  std::sort(worst.begin(), worst.end(), [](auto* a, auto* b) { return a->sqnr_db < b->sqnr_db; });
  std::cout << "lowest SQNR (dB):";
  for (std::size_t k = 0; k < worst.size() && k < 5; ++k) {
    std::cout << " " << worst[k]->name << " " << std::setprecision(1) << worst[k]->sqnr_db;
  }
  std::cout << std::defaultfloat << "\n";

  save_and_announce(out, o.output);
  if (!o.trt_cache.empty()) {
    quant::write_trt_calibration_cache(ranges, o.trt_cache);
    std::cout << "wrote " << o.trt_cache << " (TensorRT calibration cache, " << ranges.size() << " tensors)\n";
  }
  if (!o.ranges.empty()) {
    quant::write_range_json(ranges, q.activations, o.ranges);
    std::cout << "wrote " << o.ranges << " (" << ranges.size() << " tensor ranges)\n";
  }
  if (!o.report.empty()) {
    nlohmann::json sqnr = nlohmann::json::array();
    for (const auto& t : err.tensors) {
      sqnr.push_back({{"tensor", t.name}, {"node", t.producer}, {"op", t.producer_op},
                      {"sqnr_db", std::isfinite(t.sqnr_db) ? nlohmann::json(t.sqnr_db) : nlohmann::json(nullptr)}});
    }
    nlohmann::json j = {{"model", o.input},
                        {"output", o.output},
                        {"method", o.method},
                        {"batches", batches.size()},
                        {"nodes_quantized", qdq.nodes_quantized},
                        {"activations_quantized", qdq.activations_quantized},
                        {"weights_quantized", qdq.weights_quantized},
                        {"biases_quantized", qdq.biases_quantized},
                        {"left_in_float", qdq.skipped},
                        {"fallback_nodes", fallback.excluded_nodes},
                        {"top1_agreement", err.top1_agreement},
                        {"samples", err.samples},
                        {"sqnr", sqnr}};
    write_file_atomically(o.report, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

std::vector<runtime::tensor_map> batches_from_dir(const runtime::session& s, const fs::path& dir) {
  if (!fs::is_directory(dir)) throw error(errc::io, dir.string() + ": not a folder");
  std::vector<fs::path> subdirs, files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) subdirs.push_back(e.path());
    else if (e.path().extension() == ".pb") files.push_back(e.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  std::sort(files.begin(), files.end());
  std::vector<runtime::tensor_map> batches;
  for (const fs::path& d : subdirs) batches.push_back(runtime::inputs_from_dir(s, d.string()));
  if (batches.empty()) {
    auto data = std::find_if(s.inputs().begin(), s.inputs().end(), [](const runtime::io_info& i) { return !i.optional; });
    if (data == s.inputs().end()) throw error(errc::invalid_argument, "the model has no input to feed");
    for (const fs::path& f : files) batches.push_back({{data->name, runtime::read_tensor_file(f.string())}});
  }
  if (batches.empty()) throw error(errc::invalid_argument, dir.string() + ": no .pb files or test-data folders");
  return batches;
}

command add_quantize(CLI::App& app) {
  auto* sub = app.add_subcommand("quantize", "Calibrate, insert INT8 QuantizeLinear/DequantizeLinear (QDQ), report SQNR");
  auto o = std::make_shared<quantize_options>();
  sub->add_option("model", o->input, "Input float ONNX model")->required();
  sub->add_option("-o,--output", o->output, "Output QDQ model")->required();
  sub->add_option("--calib-dir", o->calib_dir, "Calibration batches: test-data subfolders or one .pb per batch");
  sub->add_option("--calib-random", o->calib_random, "Calibrate on N seeded random batches");
  sub->add_option("--seed", o->seed, "Seed for --calib-random (default 0)");
  sub->add_option("--method", o->method, "minmax | percentile | entropy | mse (default entropy)");
  sub->add_option("--percentile", o->percentile, "Percentile kept by --method percentile (default 99.99)");
  sub->add_flag("--per-channel", [o](std::int64_t) { o->per_tensor = false; }, "Per-channel weight scales (default)");
  sub->add_flag("--per-tensor", o->per_tensor, "One scale per weight tensor");
  sub->add_option("--activation", o->activation, "s8 (int8 symmetric, default) or u8 (uint8 asymmetric)");
  sub->add_option("--exclude", o->exclude, "Node name or op type to leave in float (repeatable)")->delimiter(',');
  sub->add_option("--trt-cache", o->trt_cache, "Also write a TensorRT calibration cache");
  sub->add_option("--ranges", o->ranges, "Also write the per-tensor ranges and scales as JSON");
  sub->add_option("--report", o->report, "Write a JSON report (SQNR per tensor, fallback, agreement)");
  sub->add_option("--save-state", o->save_state, "Save the calibration state (histograms) to merge later");
  sub->add_option("--merge-state", o->merge_states, "Merge a saved calibration state (repeatable; shards)");
  sub->add_option("--validation-dir", o->validation_dir, "Batches for SQNR and the fallback (default: the first 8 calibration batches)");
  sub->add_option("--min-agreement", o->min_agreement, "Top-1 agreement budget for the fallback (default 0.99)");
  sub->add_flag("--no-fallback", o->no_fallback, "Keep every quantizable node quantized");
  sub->add_option("-O", o->level, "Optimize the float model first at this level, 0..2 (default 2)")->check(CLI::Range(0, 2));
  sub->add_option("--threads", o->threads, "Calibration threads (default: all cores)");
  return {sub, [o] { return run_quantize(*o); }};
}

}  // namespace inferopt::cli
