#pragma once
// Pipelines the CLI's commands and the Python package run the same way around the library's
// main calls: the float model's clean-up before quantization, the finish for onnxruntime, the
// to-fp16 pipeline text.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::tooling {

/// Runs `p` on `m`, each pass verified.
void run_verified(ir::model& m, pipeline p);

/// -O<level> on the float model first (at most 2): BatchNormalization folded into Conv and
/// Relu kept next to its producer are what QDQ placement and int8 kernels expect.
void prepare_float_model(ir::model& m, int level);

/// Attention's Q, K and V projections as one product (merge-parallel-matmuls): onnxruntime
/// runs a QDQ product in int8 only when its activation's QuantizeLinear has one reader.
void pack_projections(ir::model& m);

/// The last step before writing a quantized model: residual sums read by a
/// LayerNormalization become Sum (residual-sum-before-norm), so onnxruntime on CPU keeps its
/// faster Add + LayerNormalization kernels instead of forming SkipLayerNormalization.
void finish_for_onnxruntime(ir::model& m);

/// The batches dynamic quantization's error is measured on: `validation` when there are any,
/// else the first quant::default_validation_batches of `samples`, else one random batch
/// (`seed`) when every input of `probe` is real-valued; empty when there is none.
std::vector<runtime::tensor_map> measuring_batches(const runtime::session& probe, std::vector<runtime::tensor_map> validation,
                                                   std::vector<runtime::tensor_map> samples, std::uint64_t seed);

/// Names to leave in float, sorted into op types (capitalised, no separators: Conv, Gemm) and
/// node names.
void split_exclusions(const std::vector<std::string>& names, std::vector<std::string>& op_types,
                      std::vector<std::string>& nodes);

/// `infer-shapes,to-fp16{...}`: shapes first, as the pass types untyped values through the
/// ops it knows. @throws error(errc::invalid_argument) for names that would break the text.
std::string fp16_pipeline_text(bool keep_io_types, const std::vector<std::string>& block_ops,
                               const std::vector<std::string>& block_nodes);

}  // namespace inferopt::tooling
