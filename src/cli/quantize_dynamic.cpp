// `inferopt quantize --mode dynamic`: int8 weights, activations quantized at run time
// (quant/dynamic_quantize.hpp). No calibration is needed; sample inputs, when given, only
// measure what it changed.

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "inferopt/quant/dynamic_quantize.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/quantize_model.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "quantize_cli.hpp"

namespace inferopt::cli {
namespace {

/// Options that only a calibration has something to write for.
void check_dynamic_arguments(const quantize_cli_options& o) {
  refuse_overwrite(o.input, o.output);
  for (const auto& [flag, given] : {std::pair{"--trt-cache", !o.trt_cache.empty()}, std::pair{"--ranges", !o.ranges.empty()},
                                    std::pair{"--save-state", !o.save_state.empty()},
                                    std::pair{"--merge-state", !o.merge_states.empty()},
                                    std::pair{"--smooth-quant", o.smooth_quant >= 0.0}}) {
    if (given) throw error(errc::invalid_argument, std::string(flag) + " needs a calibration: it goes with --mode static");
  }
  if (o.calib_text.empty() != o.tokenizer.empty()) throw error(errc::invalid_argument, "--calib-text and --tokenizer go together");
  probe_writable({o.output, o.report});
}

/// The batches the error is measured on (tooling::measuring_batches): --validation-dir, the
/// sample batches given, or one random batch.
std::vector<runtime::tensor_map> measuring_batches(const quantize_cli_options& o, const runtime::session& probe) {
  quantize_inputs in = read_quantize_inputs(o, probe);
  return tooling::measuring_batches(probe, std::move(in.validation), std::move(in.calibration), o.seed);
}

void print_dynamic(const quant::dynamic_report& r, bool per_channel) {
  std::cout << "quantized " << r.nodes_quantized << " linear layers dynamically (" << r.activations_quantized
            << " activations quantized at run time, " << r.weights_quantized << " int8 weights "
            << (per_channel ? "per channel" : "per tensor") << "); opset " << r.opset
            << (r.opset_raised ? " (converted for DynamicQuantizeLinear)" : "") << "\n";
  for (const std::string& line : r.skipped) std::cout << "  left in float: " << line << "\n";
}

nlohmann::json dynamic_report_json(const quantize_cli_options& o, const quant::dynamic_report& r,
                                   const quant::quantization_error* err) {
  nlohmann::json j{{"model", o.input}, {"output", o.output}};
  j.update(tooling::to_json(r, err));
  return j;
}

}  // namespace

int run_quantize_dynamic(const quantize_cli_options& o) {
  check_dynamic_arguments(o);
  const int weight_bits = weight_bits_of(o.weight_bits);
  ir::model m = load_checked(o.input);
  // The model as given by default: dynamic INT8 needs no folding, and on our trained
  // MiniLM-sized encoder -O2 first cost onnxruntime 17% (2.00x -> 1.67x over float).
  tooling::prepare_float_model(m, o.level < 0 ? 0 : o.level);
  const runtime::session probe(m, runtime::session_options{.threads = 1});
  const std::vector<runtime::tensor_map> batches = measuring_batches(o, probe);
  const ir::model float_model = m.clone();

  quant::dynamic_options d;
  d.weights = o.per_tensor ? quant::weight_granularity::per_tensor : quant::weight_granularity::per_channel;
  d.weight_bits = weight_bits;
  print_weight_bits(weight_bits, o.weight_bits);
  tooling::split_exclusions(o.exclude, d.exclude_op_types, d.exclude_nodes);
  for (const char* op : {"MatMul", "Gemm"}) {  // --op-types narrows the two it knows
    if (!o.op_types.empty() && std::find(o.op_types.begin(), o.op_types.end(), op) == o.op_types.end()) d.exclude_op_types.push_back(op);
  }
  const quant::dynamic_report r = quant::quantize_dynamic(m, d);
  print_dynamic(r, !o.per_tensor);

  std::optional<quant::quantization_error> err;
  if (batches.empty()) {
    std::cout << "error not measured: the model reads integer inputs; give --calib-text FILE --tokenizer T.json or --validation-dir DIR\n";
  } else {
    err = quant::measure_quantization_error(float_model, m, batches);
    std::cout << "top-1 agreement with float: " << std::fixed << std::setprecision(2) << 100.0 * err->top1_agreement << "% on "
              << err->samples << " sample(s)\n"
              << "output cosine with float: " << std::setprecision(4) << err->output_cosine << " (mean of "
              << err->cosine_samples << " sample(s))\n"
              << std::defaultfloat;
  }
  tooling::finish_for_onnxruntime(m);
  save_and_announce(m, o.output);
  if (!o.report.empty()) write_report(o.report, dynamic_report_json(o, r, err ? &*err : nullptr));
  return 0;
}

}  // namespace inferopt::cli
