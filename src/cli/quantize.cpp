// `inferopt quantize`: calibrate on sample inputs, insert QDQ, and write the range table and
// a TensorRT calibration cache from the same calibration; report per-tensor SQNR and fall
// back to float where top-1 agreement would drop under the budget.

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "quantize_cli.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/core/atomic_file.hpp"
#include "inferopt/core/cpu_features.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/quant/quantize_model.hpp"
#include "inferopt/quant/range_json.hpp"
#include "inferopt/quant/smooth_quant.hpp"
#include "inferopt/quant/text_calibration.hpp"
#include "inferopt/quant/trt_calibration_cache.hpp"
#include "inferopt/runtime/inputs.hpp"

namespace inferopt::cli {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

int weight_bits_of(const std::string& flag) {
  if (flag == "auto") return quant::weight_bits_for(cpu_features_of_this_machine());
  int bits = 0;
  const auto [end, ec] = std::from_chars(flag.data(), flag.data() + flag.size(), bits);
  if (ec != std::errc{} || end != flag.data() + flag.size()) {
    throw error(errc::invalid_argument, "--weight-bits must be auto or 2..8, got '" + flag + "'");
  }
  (void)quant::largest_weight_code(bits);  // the library's range check
  return bits;
}

void print_weight_bits(int bits, const std::string& flag) {
  std::cout << "weights: " << bits << "-bit";
  if (flag == "auto" && bits == quant::reduced_weight_bits) {
    std::cout << " (this CPU has no VNNI: onnxruntime's int8 kernels here would saturate 8-bit products;"
                 " --weight-bits 8 for a VNNI target)";
  } else if (flag == "auto") {
    std::cout << " (--weight-bits 7 for an x86 target without VNNI)";
  }
  std::cout << "\n";
}

namespace {

/// SmoothQuant on the calibration batches, before calibration sees the model; what it did is
/// printed, and returned for the report.
quant::smooth_quant_report smooth(ir::model& m, const quantize_cli_options& o, const quantize_inputs& in) {
  if (in.calibration.empty()) throw error(errc::invalid_argument, "--smooth-quant needs calibration batches (--calib-dir, --calib-text or --calib-random)");
  quant::smooth_quant_report r = quant::smooth_quant(m, in.calibration, quant::smooth_quant_options{.alpha = o.smooth_quant});
  const auto folded = std::count_if(r.smoothed.begin(), r.smoothed.end(), [](const auto& a) { return a.folded_into_norm; });
  std::cout << "SmoothQuant (alpha " << o.smooth_quant << "): " << r.smoothed.size() << " activations smoothed (" << folded
            << " folded into LayerNorm, " << r.smoothed.size() - folded << " through a Mul)\n";
  std::vector<const quant::smoothed_activation*> worst;
  for (const auto& a : r.smoothed) worst.push_back(&a);
  std::sort(worst.begin(), worst.end(), [](auto* a, auto* b) { return a->outlier_ratio_before > b->outlier_ratio_before; });
  std::cout << "  largest channel / median channel, before -> after:";
  for (std::size_t k = 0; k < worst.size() && k < 4; ++k) {
    std::cout << " " << worst[k]->value << " " << std::setprecision(3) << worst[k]->outlier_ratio_before << " -> "
              << worst[k]->outlier_ratio_after;
  }
  std::cout << std::defaultfloat << "\n";
  for (const std::string& line : r.skipped) std::cout << "  not smoothed: " << line << "\n";
  return r;
}

/// The checks that need no model, and a probe of every file to write, before time is spent.
void check_arguments(const quantize_cli_options& o) {
  refuse_overwrite(o.input, o.output);
  const int sources = (o.calib_dir.empty() ? 0 : 1) + (o.calib_random > 0 ? 1 : 0) + (o.calib_text.empty() ? 0 : 1);
  if (sources > 1 || (sources == 0 && o.merge_states.empty())) {
    throw error(errc::invalid_argument, "give one of --calib-dir DIR, --calib-text FILE or --calib-random N (or --merge-state files)");
  }
  if (o.calib_text.empty() != o.tokenizer.empty()) throw error(errc::invalid_argument, "--calib-text and --tokenizer go together");
  probe_writable({o.output, o.trt_cache, o.ranges, o.report, o.save_state});
}

/// Random batches calibrate images and other real-valued inputs; an integer input holds token
/// ids, indices or lengths, and random ones are not the data (a MiniLM calibrated on them kept
/// an output cosine of 0.09-0.33).
void refuse_random_tokens(const runtime::session& probe) {
  using enum ir::data_type;
  for (const runtime::io_info& i : probe.inputs()) {
    if (i.type == int8 || i.type == uint8 || i.type == int16 || i.type == uint16 || i.type == int32 || i.type == uint32 ||
        i.type == int64 || i.type == uint64) {
      throw error(errc::invalid_argument, "--calib-random cannot calibrate integer input '" + i.name +
                                              "' (token ids or indices: random values are not the model's data); give --calib-text FILE --tokenizer tokenizer.json, or real batches with --calib-dir");
    }
  }
}

}  // namespace

quantize_inputs read_quantize_inputs(const quantize_cli_options& o, const runtime::session& probe) {
  quantize_inputs in;
  if (o.calib_random > 0) refuse_random_tokens(probe);
  if (!o.calib_dir.empty()) in.calibration = batches_from_dir(probe, o.calib_dir);
  if (!o.calib_text.empty()) in.calibration = text_batches(probe, o.calib_text, o.tokenizer, o.seq_len);
  for (int k = 0; k < o.calib_random; ++k) in.calibration.push_back(runtime::random_inputs(probe, o.seed + k));
  for (const std::string& path : o.merge_states) in.shards.push_back(quant::calibration_state::parse(read_binary(path)));
  if (!o.validation_dir.empty()) in.validation = batches_from_dir(probe, o.validation_dir);
  return in;
}

namespace {

/// The fallback's metric: as asked, or what the model's first output calls for.
quant::fallback_metric metric_of(const quantize_cli_options& o, const ir::model& m) {
  if (o.metric == "top1") return quant::fallback_metric::top1;
  if (o.metric == "cosine") return quant::fallback_metric::cosine;
  if (o.metric != "auto") throw error(errc::invalid_argument, "--metric must be auto, top1 or cosine, got '" + o.metric + "'");
  return quant::default_fallback_metric(m);
}

/// `attention`: the model is an attention model and --op-types was not given.
quant::quantize_options library_options(const quantize_cli_options& o, const quantize_inputs& in, const ir::model& m,
                                        bool attention) {
  quant::quantize_options q;
  q.fallback.metric = metric_of(o, m);
  q.calibration.calibrator.method = quant::parse_calibration_method(o.method);
  q.calibration.calibrator.percentile = o.percentile;
  q.calibration.calibrator.symmetric = o.activation == "s8";
  q.calibration.threads = o.threads;
  q.calibration.on_progress = [](std::size_t done, std::size_t total) {
    print_progress(static_cast<std::int64_t>(done), static_cast<std::int64_t>(total));
  };
  q.calibration_batches = in.calibration;
  q.merge_states = in.shards;
  if (!o.save_state.empty()) {
    q.on_calibrated = [path = o.save_state](const quant::calibration_state& s) { write_file_atomically(path, s.serialize()); };
  }
  q.qdq.weights = o.per_tensor ? quant::weight_granularity::per_tensor : quant::weight_granularity::per_channel;
  q.qdq.activations = scheme_of(o.activation);
  tooling::split_exclusions(o.exclude, q.qdq.exclude_op_types, q.qdq.exclude_nodes);
  q.qdq.op_types = attention ? quant::transformer_op_types() : o.op_types;
  q.fallback.min_top1_agreement = o.no_fallback ? 0.0 : o.min_agreement;
  q.fallback.min_output_cosine = o.no_fallback ? -1.0 : o.min_cosine;
  q.validation_batches = in.validation;
  q.seed = o.seed;
  return q;
}

void print_qdq(const quant::qdq_report& qdq, bool per_channel) {
  std::cout << "quantized " << qdq.nodes_quantized << " nodes (" << qdq.activations_quantized << " activations, "
            << qdq.weights_quantized << " weights " << (per_channel && !qdq.per_tensor_fallback ? "per channel" : "per tensor")
            << ", " << qdq.biases_quantized << " int32 biases); opset " << qdq.opset
            << (qdq.opset_raised ? " (converted for per-axis scales)" : "") << "\n";
  for (const std::string& line : qdq.skipped) std::cout << "  left in float: " << line << "\n";
}

void print_error(const quantize_cli_options& o, const quant::quantize_result& r, quant::fallback_metric metric) {
  const quant::quantization_error& err = r.error;
  const std::string not_met = r.budget_met || o.no_fallback ? "" : " (NOT met)";
  const bool cosine = metric == quant::fallback_metric::cosine;
  std::cout << "top-1 agreement with float: " << std::fixed << std::setprecision(2) << 100.0 * err.top1_agreement
            << "% on " << err.samples << " sample(s)"
            << (o.no_fallback || cosine ? "" : ", budget " + std::to_string(o.min_agreement * 100).substr(0, 5) + "%" + not_met) << "\n";
  std::cout << "output cosine with float: " << std::setprecision(4) << err.output_cosine << " (mean of " << err.cosine_samples
            << " sample(s))" << (o.no_fallback || !cosine ? "" : ", budget " + std::to_string(o.min_cosine).substr(0, 6) + not_met)
            << "\n";
  if (!r.fallback_nodes.empty()) {
    std::cout << "fallback to float (worst SQNR first):";
    for (const std::string& n : r.fallback_nodes) std::cout << " " << n;
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
}

nlohmann::json report_json(const quantize_cli_options& o, const quant::quantize_result& r, std::size_t batches,
                           quant::fallback_metric metric, const quant::smooth_quant_report& smoothed) {
  nlohmann::json report{{"model", o.input}, {"output", o.output}, {"method", o.method}, {"batches", batches}};
  report.update(to_json(r));
  report["fallback_metric"] = std::string(quant::to_string(metric));
  report["smooth_quant"] = to_json(smoothed);
  return report;
}

void write_extras(const quantize_cli_options& o, const quant::quantize_result& r, quant::activation_scheme scheme,
                  std::size_t batches, quant::fallback_metric metric, const quant::smooth_quant_report& smoothed) {
  if (!o.trt_cache.empty()) {
    quant::write_trt_calibration_cache(r.ranges, o.trt_cache);
    std::cout << "wrote " << o.trt_cache << " (TensorRT calibration cache, " << r.ranges.size() << " tensors)\n";
  }
  if (!o.ranges.empty()) {
    quant::write_range_json(r.ranges, scheme, o.ranges);
    std::cout << "wrote " << o.ranges << " (" << r.ranges.size() << " tensor ranges)\n";
  }
  if (!o.report.empty()) write_report(o.report, report_json(o, r, batches, metric, smoothed));
}

/// Runs `step` on the calibration batches; where sentences ran at their own lengths and one did
/// not fit the model (a position table shorter than the sentence), the error says how long they
/// were and how to bound them.
template <typename Step>
auto with_length_hint(const quantize_cli_options& o, const quantize_inputs& in, Step step) {
  try {
    return step();
  } catch (const error& e) {
    if (o.calib_text.empty() || o.seq_len > 0 || (e.code() != errc::invalid_argument && e.code() != errc::invalid_model)) throw;
    std::int64_t longest = 0;
    for (const runtime::tensor_map& batch : in.calibration) {
      for (const auto& [name, t] : batch) longest = std::max(longest, t.shape().back());
    }
    throw error(e.code(), std::string(e.what()) + " (calibration sentences run at their own lengths, up to " + std::to_string(longest) +
                              " tokens here; --seq-len N truncates and pads them to N)");
  }
}

int run_quantize(const quantize_cli_options& o) {
  if (o.mode == "dynamic") return run_quantize_dynamic(o);
  if (o.mode != "static") throw error(errc::invalid_argument, "--mode must be static or dynamic, got '" + o.mode + "'");
  check_arguments(o);
  const int weight_bits = weight_bits_of(o.weight_bits);
  ir::model m = load_checked(o.input);
  tooling::prepare_float_model(m, o.level < 0 ? 2 : o.level);
  const bool attention = o.op_types.empty() && quant::has_attention(m);
  if (attention) tooling::pack_projections(m);
  const runtime::session probe(m, runtime::session_options{.threads = 1});
  const quantize_inputs in = read_quantize_inputs(o, probe);
  const quant::smooth_quant_report smoothed =
      o.smooth_quant >= 0.0 ? with_length_hint(o, in, [&] { return smooth(m, o, in); }) : quant::smooth_quant_report{};
  quant::quantize_options options = library_options(o, in, m, attention);
  options.qdq.weight_bits = weight_bits;
  print_weight_bits(weight_bits, o.weight_bits);
  if (attention) {
    std::cout << "attention model: quantizing MatMul and Gemm only (--op-types overrides)\n";
  }
  if (!in.calibration.empty()) {
    std::cout << "calibrating on " << in.calibration.size() << " batch(es), method " << o.method << "\n";
  }
  const quant::quantize_result r = with_length_hint(o, in, [&] { return quant::quantize_model(m, options); });
  if (!r.opset_conversion.empty()) std::cout << r.opset_conversion << "\n";
  print_qdq(r.qdq, options.qdq.weights == quant::weight_granularity::per_channel);
  print_error(o, r, options.fallback.metric);
  tooling::finish_for_onnxruntime(m);
  save_and_announce(m, o.output);
  write_extras(o, r, options.qdq.activations, in.calibration.size(), options.fallback.metric, smoothed);
  return 0;
}

void declare_quantize(CLI::App& sub, quantize_cli_options& o) {
  add_model_and_output(sub, o.input, o.output, "Input float ONNX model", "Output QDQ model");
  sub.add_option("--mode", o.mode, "static (calibrated QDQ, default) or dynamic (int8 weights, activations quantized at run time)");
  sub.add_option("--smooth-quant", o.smooth_quant, "SmoothQuant: move activation outliers into the weights first, migration strength ALPHA in [0, 1] (0.5 typical)");
  sub.add_option("--calib-dir", o.calib_dir, "Calibration batches: test-data subfolders or one .pb per batch");
  sub.add_option("--calib-random", o.calib_random, "Calibrate on N seeded random batches");
  sub.add_option("--calib-text", o.calib_text, "Calibrate a text encoder on these sentences, one per line (needs --tokenizer)");
  sub.add_option("--tokenizer", o.tokenizer, "A WordPiece tokenizer.json (Hugging Face) for --calib-text");
  sub.add_option("--seq-len", o.seq_len, "Truncate and pad sentences to N tokens where the model's sequence length is symbolic (default: each to its own length)");
  sub.add_option("--seed", o.seed, "Seed for --calib-random (default 0)");
  sub.add_option("--method", o.method, "minmax | percentile | entropy | mse (default entropy)");
  sub.add_option("--percentile", o.percentile, "Percentile kept by --method percentile (default 99.99)");
  sub.add_flag("--per-channel", [&o](std::int64_t) { o.per_tensor = false; }, "Per-channel weight scales (default)");
  sub.add_flag("--per-tensor", o.per_tensor, "One scale per weight tensor");
  sub.add_option("--weight-bits", o.weight_bits,
                 "auto (default: 7 on x86 CPUs without VNNI, whose int8 kernels saturate 8-bit products; else 8), or 2..8");
  sub.add_option("--activation", o.activation, "s8 (int8 symmetric, default) or u8 (uint8 asymmetric)");
  sub.add_option("--op-types", o.op_types, "Op types to quantize (default: all the quantizer knows; MatMul,Gemm for attention models)")
      ->delimiter(',');
  sub.add_option("--exclude", o.exclude, "Node name or op type to leave in float (repeatable)")->delimiter(',');
  sub.add_option("--trt-cache", o.trt_cache, "Also write a TensorRT calibration cache");
  sub.add_option("--ranges", o.ranges, "Also write the per-tensor ranges and scales as JSON");
  sub.add_option("--report", o.report, "Write a JSON report (SQNR per tensor, fallback, agreement)");
  sub.add_option("--save-state", o.save_state, "Save the calibration state (histograms) to merge later");
  sub.add_option("--merge-state", o.merge_states, "Merge a saved calibration state (repeatable; shards)");
  sub.add_option("--validation-dir", o.validation_dir, "Batches for SQNR and the fallback (default: the first 8 calibration batches)");
  sub.add_option("--min-agreement", o.min_agreement, "Top-1 agreement budget for the fallback (default 0.99)");
  sub.add_flag("--no-fallback", o.no_fallback, "Keep every quantizable node quantized");
  sub.add_option("--metric", o.metric, "Fallback budget: top1, cosine or auto (cosine for outputs without classes; default)");
  sub.add_option("--min-cosine", o.min_cosine, "Cosine budget: mean output cosine with float (default 0.99)");
  sub.add_option("-O", o.level, "Optimize the float model first at this level, 0..2 (default 2 static, 0 dynamic)")
      ->check(CLI::Range(0, 2));
  sub.add_option("--threads", o.threads, "Calibration threads (default: all cores)");
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

std::vector<runtime::tensor_map> text_batches(const runtime::session& s, const std::string& text, const std::string& tokenizer,
                                              std::size_t seq_len) {
  const quant::wordpiece_tokenizer t = quant::wordpiece_tokenizer::from_file(tokenizer);
  return quant::text_calibration_batches(s, quant::read_sentences(text), t, seq_len);
}

command add_quantize(CLI::App& app) {
  return make_command(app, "quantize", "Calibrate, insert INT8 QuantizeLinear/DequantizeLinear (QDQ), report SQNR",
                      declare_quantize, run_quantize);
}

}  // namespace inferopt::cli
