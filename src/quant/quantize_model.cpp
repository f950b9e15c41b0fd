#include "inferopt/quant/quantize_model.hpp"

#include <algorithm>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/convert_opset.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/quant/calibrators.hpp"
#include "inferopt/runtime/inputs.hpp"

namespace inferopt::quant {
namespace {

/// Calibrates on the batches, merges the shards after them, hands the state to
/// `on_calibrated` and computes the ranges.
void calibrate_into(quantize_result& r, const ir::model& m, const quantize_options& o) {
  if (!o.calibration_batches.empty()) {
    calibration_result calibrated = calibrate(m, o.calibration_batches, o.calibration);
    r.state = std::move(calibrated.state);
    r.ranges = std::move(calibrated.ranges);
  }
  for (const calibration_state& shard : o.merge_states) r.state.merge(shard);
  if (o.on_calibrated) o.on_calibrated(r.state);
  // Merged shards change the statistics, so their ranges are computed again.
  if (!o.merge_states.empty()) r.ranges = compute_ranges(r.state, o.calibration.calibrator);
}

/// The validation batches `o` names (see `quantize_options::validation_batches`); `random`
/// holds the random batch when one is made.
std::span<const runtime::tensor_map> validation_of(const ir::model& m, const quantize_options& o,
                                                   std::vector<runtime::tensor_map>& random) {
  if (!o.validation_batches.empty()) return o.validation_batches;
  if (!o.calibration_batches.empty()) {
    return o.calibration_batches.first(std::min(o.calibration_batches.size(), default_validation_batches));
  }
  const runtime::session probe(m, runtime::session_options{.threads = 1});
  random.push_back(runtime::random_inputs(probe, o.seed));
  return random;
}

/// Raises `m` to the opset the QDQ model needs (see quantize_model); returns the line saying
/// so, or an empty one when the opset stays.
std::string raise_opset(ir::model& m, const qdq_options& q) {
  const std::int64_t opset = m.opset("").value_or(0);
  const bool per_channel = q.weights == weight_granularity::per_channel;
  if (opset >= 13 || (opset >= 10 && !per_channel)) return {};
  const std::int64_t target = per_channel ? 13 : 11;
  const std::string reason = opset < 10 ? "QuantizeLinear" : "per-channel DequantizeLinear";
  try {
    // convert_opset leaves the model as it was when it throws.
    const ir::opset_conversion_report r = ir::convert_opset(m, target);
    return ir::describe(r) + " for " + reason;
  } catch (const error& e) {
    if (opset >= 10) return {};  // quantize_qdq falls back to per-tensor weights
    throw error(errc::unsupported, "quantize: " + reason + " needs opset 10 or later: " + e.what());
  }
}

}  // namespace

ir::model model_for_calibration(const ir::model& m, const qdq_options& qdq) {
  ir::model copy = m.clone();
  (void)raise_opset(copy, qdq);
  return copy;
}

quantize_result quantize_model(ir::model& m, const quantize_options& options) {
  if (options.calibration_batches.empty() && options.merge_states.empty()) {
    throw error(errc::invalid_argument, "quantize: no calibration batches and no calibration states to merge");
  }
  quantize_result r;
  // The float model at the opset QDQ needs; `m` stays as it was until the end.
  ir::model float_model = m.clone();
  r.opset_conversion = raise_opset(float_model, options.qdq);
  calibrate_into(r, float_model, options);

  // Each fallback step quantizes the float model again with more nodes left out.
  auto quantize_with = [&](const std::vector<std::string>& excluded) {
    ir::model copy = float_model.clone();
    qdq_options with = options.qdq;
    with.exclude_nodes.insert(with.exclude_nodes.end(), excluded.begin(), excluded.end());
    r.qdq = quantize_qdq(copy, r.ranges, with);
    return copy;
  };
  std::vector<runtime::tensor_map> random;
  const std::span<const runtime::tensor_map> validation = validation_of(float_model, options, random);
  fallback_result fallback = fall_back_to_float(float_model, quantize_with, validation, options.fallback);
  ir::verify(fallback.quantized.graph());

  m = std::move(fallback.quantized);  // `r.qdq` describes it: it was built last
  r.fallback_nodes = std::move(fallback.excluded_nodes);
  r.error = std::move(fallback.final_error);
  r.budget_met = fallback.budget_met;
  return r;
}

}  // namespace inferopt::quant
