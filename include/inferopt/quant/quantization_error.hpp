#pragma once
/// How much quantization changed a model: per-tensor SQNR against the float model, top-1
/// agreement of the outputs, and the accuracy-aware fallback that returns the worst layers
/// to float until a budget holds.

#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::quant {

/// One tensor's signal-to-quantization-noise ratio over all batches:
/// 10 log10(sum x^2 / sum (x - x_q)^2), +inf when the two agree exactly.
struct tensor_sqnr {
  std::string name;
  std::string producer;       ///< the node that computes it in the float model
  std::string producer_op;
  double sqnr_db = 0.0;
  std::int64_t elements = 0;  ///< compared per batch, summed
};

struct quantization_error {
  /// Every float tensor computed by a node in both models (same name, same element count),
  /// in the float model's node order: the error as it accumulates through the network.
  std::vector<tensor_sqnr> tensors;
  /// Share of samples whose arg-max over the last axis of the first output agrees (1 when
  /// the output is not float).
  double top1_agreement = 1.0;
  std::int64_t samples = 0;
};

/// Runs both models on every batch (one thread each, one batch at a time: memory is one
/// batch's activations) and measures the error the quantized model adds.
[[nodiscard]] quantization_error measure_quantization_error(const ir::model& float_model,
                                                            const ir::model& quantized_model,
                                                            std::span<const runtime::tensor_map> batches);

struct fallback_options {
  double min_top1_agreement = 0.99;  ///< the budget: agreement with the float model
  int max_layers = 1 << 30;          ///< at most this many nodes go back to float
};

struct fallback_result {
  std::vector<std::string> excluded_nodes;  ///< in the order they went back to float
  ir::model quantized;                      ///< the last model built, with those exclusions
  quantization_error final_error;           ///< measured on `quantized`
  bool budget_met = false;
};

/// Accuracy-aware fallback: while top-1 agreement is under the budget, the quantized node
/// whose output has the lowest SQNR (worst first) is excluded and the model re-quantized.
/// `quantize` builds a quantized model from the float one with the given node exclusions.
[[nodiscard]] fallback_result fall_back_to_float(
    const ir::model& float_model, const std::function<ir::model(const std::vector<std::string>&)>& quantize,
    std::span<const runtime::tensor_map> batches, const fallback_options& options = {});

}  // namespace inferopt::quant
