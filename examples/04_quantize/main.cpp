// Calibrates the default model on seeded random batches (entropy method, streaming
// histograms), quantizes it to INT8 QDQ with per-channel weights, and measures what that
// cost: top-1 agreement with the float model and the SQNR of the tensors it changed most.
// Then shows that calibration shards merge exactly: two halves merged give the same
// histograms, min and max as one pass.

#include <algorithm>
#include <iostream>

#include "inferopt/inferopt.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/quant/quantization_error.hpp"

int main() {
  using namespace inferopt;
  try {
    ir::model m = ir::make_default_model();
    pipeline fold = level_pipeline(2, builtin_registry());  // Conv+BN folded first
    pass_manager().run(fold, m);

    runtime::session probe(m, runtime::session_options{.threads = 1});
    std::vector<runtime::tensor_map> batches;
    for (std::uint64_t seed = 0; seed < 16; ++seed) batches.push_back(runtime::random_inputs(probe, seed));

    quant::calibrate_options options;
    options.calibrator.method = quant::calibration_method::entropy;
    const quant::calibration_result calibrated = quant::calibrate(m, batches, options);

    // Shards: the first and second halves calibrated apart, then merged.
    const std::span<const runtime::tensor_map> all(batches);
    quant::calibration_state merged = quant::calibrate(m, all.first(8), options).state;
    merged.merge(quant::calibrate(m, all.last(8), options).state);
    // Counts, min/max and histograms merge exactly (moving averages only up to rounding).
    bool shards_equal = merged.tensors().size() == calibrated.state.tensors().size();
    for (const auto& [name, one_pass] : calibrated.state.tensors()) {
      const quant::tensor_statistics* sharded = merged.find(name);
      shards_equal = shards_equal && sharded && std::ranges::equal(sharded->histogram(), one_pass.histogram()) &&
                     std::ranges::equal(sharded->abs_histogram(), one_pass.abs_histogram()) &&
                     sharded->min() == one_pass.min() && sharded->max() == one_pass.max();
    }

    ir::model int8 = ir::parse_model(ir::serialize_model(m));
    const quant::qdq_report report = quant::quantize_qdq(int8, calibrated.ranges);
    const quant::quantization_error error = quant::measure_quantization_error(m, int8, batches);

    std::cout << "calibrated " << calibrated.ranges.size() << " tensors on " << batches.size() << " batches; "
              << "two merged shards equal one pass: " << (shards_equal ? "yes" : "NO") << "\n";
    std::cout << "quantized " << report.nodes_quantized << " nodes, " << report.weights_quantized
              << " weights per channel, " << report.biases_quantized << " int32 biases\n";
    std::cout << "top-1 agreement with float: " << 100.0 * error.top1_agreement << "% of " << error.samples << "\n";
    std::vector<quant::tensor_sqnr> worst = error.tensors;
    std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return a.sqnr_db < b.sqnr_db; });
    for (std::size_t k = 0; k < worst.size() && k < 3; ++k) {
      std::cout << "  SQNR " << worst[k].sqnr_db << " dB at " << worst[k].name << " (" << worst[k].producer_op << ")\n";
    }
    if (!shards_equal || report.nodes_quantized == 0 || error.top1_agreement < 0.5) {
      std::cerr << "mismatch: expected exact shard merging, quantized nodes and agreeing outputs\n";
      return 1;
    }
    return 0;
  } catch (const error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
