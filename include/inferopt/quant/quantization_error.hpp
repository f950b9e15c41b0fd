#pragma once
/// How much quantization changed a model: per-tensor SQNR against the float model, top-1
/// agreement and cosine similarity of the first output, and the accuracy-aware fallback that
/// returns the worst layers to float until a budget holds.

#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
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
  /// Mean over samples (slices of the first output's leading axis: a sentence's hidden states,
  /// an image's embedding or logits) of the cosine similarity between float and quantized;
  /// 1 when the output is not float. What an output without classes is judged by.
  double output_cosine = 1.0;
  std::int64_t cosine_samples = 0;
};

/// Runs both models on every batch (one thread each, one batch at a time: memory is one
/// batch's activations) and measures the error the quantized model adds.
[[nodiscard]] quantization_error measure_quantization_error(const ir::model& float_model,
                                                            const ir::model& quantized_model,
                                                            std::span<const runtime::tensor_map> batches);

/// What the fallback's budget is measured in.
enum class fallback_metric {
  top1,    ///< top-1 agreement: the first output holds class scores
  cosine,  ///< mean output cosine: embeddings, hidden states, anything without classes
};

/// top1 when the model's first output is one score vector per sample (rank 2) from a
/// classifier head (Gemm, MatMul, Add, Softmax, LogSoftmax, Flatten, ...), cosine otherwise:
/// higher ranks (per-token hidden states, feature maps) and rank-2 outputs of an embedding
/// head (LayerNormalization, Tanh as BERT's pooler, an L2 normalization's Div, ReduceMean
/// pooling).
[[nodiscard]] fallback_metric default_fallback_metric(const ir::model& m);

[[nodiscard]] std::string_view to_string(fallback_metric metric);

struct fallback_options {
  fallback_metric metric = fallback_metric::top1;
  double min_top1_agreement = 0.99;  ///< the top1 budget: agreement with the float model
  double min_output_cosine = 0.99;   ///< the cosine budget: mean output cosine
  int max_layers = 1 << 30;          ///< at most this many nodes go back to float
};

/// Whether `error` meets the budget `options` set in its metric.
[[nodiscard]] bool within_budget(const quantization_error& error, const fallback_options& options);

struct fallback_result {
  std::vector<std::string> excluded_nodes;  ///< in the order they went back to float
  ir::model quantized;                      ///< the last model built, with those exclusions
  quantization_error final_error;           ///< measured on `quantized`
  bool budget_met = false;
};

/// Accuracy-aware fallback: while the budget is not met, the quantized node
/// whose output has the lowest SQNR (worst first) is excluded and the model re-quantized.
/// `quantize` builds a quantized model from the float one with the given node exclusions.
[[nodiscard]] fallback_result fall_back_to_float(
    const ir::model& float_model, const std::function<ir::model(const std::vector<std::string>&)>& quantize,
    std::span<const runtime::tensor_map> batches, const fallback_options& options = {});

}  // namespace inferopt::quant
