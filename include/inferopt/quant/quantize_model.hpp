#pragma once
/// Post-training INT8 quantization in one call: calibrate on sample batches (merging the
/// saved states of other shards), insert QDQ (qdq.hpp), measure per-tensor SQNR against the
/// float model and return the worst nodes to float until top-1 agreement meets a budget
/// (quantization_error.hpp). Optimizing the float model first (the CLI's -O2, which folds
/// BatchNormalization into Conv) is the caller's step, as it needs the pass registry.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/calibration_state.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/tensor_range.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::quant {

/// Validation batches taken from the calibration batches when none are given: SQNR and the
/// fallback run both models on every batch, and a few batches rank the layers well enough.
inline constexpr std::size_t default_validation_batches = 8;

struct quantize_options {
  /// Method, percentile and symmetry of the calibrator, threads, progress. The calibrator's
  /// `symmetric` should agree with `qdq.activations` (true for int8 symmetric).
  calibrate_options calibration;
  /// Borrowed: must outlive the call. May be empty when `merge_states` is not.
  std::span<const runtime::tensor_map> calibration_batches;
  /// States of other shards (`calibration_state::parse`), merged after calibrating, in order.
  /// Borrowed, like the batches. With any, the ranges are computed again from the merged state.
  std::span<const calibration_state> merge_states;
  /// Called once with the final state (shards merged), before ranges or QDQ are computed:
  /// where a caller saves it, so that a failure after it still leaves the calibration (the
  /// expensive part) behind.
  std::function<void(const calibration_state&)> on_calibrated;
  qdq_options qdq;
  /// The agreement budget; a `min_top1_agreement` of 0 keeps every quantizable node quantized.
  fallback_options fallback;
  /// Batches for SQNR and the fallback (borrowed). Empty: the first
  /// `default_validation_batches` calibration batches, or without any (merged states only),
  /// one random batch from `seed` (`runtime::random_inputs`).
  std::span<const runtime::tensor_map> validation_batches;
  std::uint64_t seed = 0;
};

struct quantize_result {
  calibration_state state;                 ///< merged shards included
  range_table ranges;                      ///< the activation ranges QDQ used
  qdq_report qdq;                          ///< what the quantization kept in the model did
  std::vector<std::string> fallback_nodes; ///< returned to float, in the order they went
  quantization_error error;                ///< of the model against the float one, on the validation batches
  bool budget_met = false;
  /// `converted opset 9 -> 13 for QuantizeLinear` when the model's opset was raised first
  /// (see quantize_model); empty when it was not.
  std::string opset_conversion;
};

/// The float model `quantize_model` calibrates: a copy of `m`, raised to the opset QDQ needs
/// as `quantize_model` raises it. States of shards calibrated apart on it (`calibrate`) are
/// what `quantize_options::merge_states` takes.
[[nodiscard]] ir::model model_for_calibration(const ir::model& m, const qdq_options& qdq);

/// Quantizes the float model `m` in place: afterwards it is the QDQ model that `result.qdq`
/// describes, structurally verified. Calibration runs on `m` as given, or on `m` converted to
/// the opset QDQ needs (ir::convert_opset), as ONNX Runtime's quantizer raises old models:
/// per-channel weights need DequantizeLinear's axis (opset 13), and a model below opset 10,
/// which has no QuantizeLinear, goes to 13 (per channel) or 11 (per tensor).
/// `result.opset_conversion` says when that happened. A model at 10 to 12 that cannot be
/// converted to 13 keeps its opset and gets per-tensor weights (`qdq_report::per_tensor_fallback`).
/// @throws error(errc::invalid_argument) when there is neither a calibration batch nor a
///         merged state, and for bad calibrator settings or ranges; error(errc::unsupported)
///         when a model below opset 10 cannot be converted; any error of calibration
///         (`calibrate`), merging (`calibration_state::merge`) or QDQ (`quantize_qdq`).
///         `m` is left as it was when anything throws.
/// Not thread-safe with respect to `m`.
[[nodiscard]] quantize_result quantize_model(ir::model& m, const quantize_options& options);

}  // namespace inferopt::quant
