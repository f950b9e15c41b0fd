#pragma once
/// Static QDQ quantization: inserts QuantizeLinear/DequantizeLinear pairs from a calibrated
/// range table, giving a standard ONNX model that ONNX Runtime and TensorRT run in int8.
/// The placement rules are written down in docs/QDQ_RULES.md.
///
///   before:  x -> Conv(W, B) -> Relu -> y -> Conv(W2, B2) -> z
///
///   after:   x -> Q -> DQ --\                              y -> Q -> DQ --\
///         W_q(int8) -> DQ -> Conv -> Relu -> y    W2_q(int8) -> DQ ---> Conv -> z
///         B_q(int32) -> DQ --/                    B2_q(int32) -> DQ --/
///
/// Algebra: DQ(Q(x)) = (clamp(round(x / s) + zp) - zp) * s. Weights are int8 symmetric
/// (zero point 0, range [-127, 127]) per output channel or per tensor; biases of Conv,
/// ConvTranspose, FusedConv and Gemm are int32 with scale s_x * s_w (per channel) and zero
/// point 0, so an int8 kernel can add them to its int32 accumulator without rescaling.
///
/// Conditions for quantizing a node (each declined node is left as it is and listed in the
/// report):
///   1. its op is one of Conv, ConvTranspose, Gemm, MatMul (default domain), FusedConv
///      (com.microsoft), Add, Concat, MaxPool, AveragePool, GlobalAveragePool, and neither its
///      name nor its op type is in the exclude lists;
///   2. every activation input (and, for Add and average pools, the output) has a range in the
///      table and is float32 (or untyped, for weighted ops whose weights are float32);
///   3. no activation input comes from a DequantizeLinear (the node is already quantized),
///      so quantizing twice gives the same model as quantizing once;
///   4. weighted ops: the weight is a constant float32 initializer (ir::constant_floats)
///      of the expected rank (Conv/ConvTranspose/FusedConv >= 3, Gemm 2, MatMul >= 2) and the
///      activation input is not a constant; MatMul with a non-constant B quantizes both inputs
///      as activations; MaxPool must not produce Indices;
///   5. a bias is quantized only when it is a constant float32 vector of one value per output
///      channel, Gemm's alpha and beta are 1, and every quantized value fits int32; otherwise
///      the bias stays float (still correct, but an int8 kernel must then add it in float).
/// Shared scales: Concat's inputs and output, and MaxPool's input and output, get one scale
/// (the union of their ranges), as ONNX Runtime's QLinearConcat and TensorRT's max-pool
/// commutation need (max commutes with a monotone quantizer, so sharing loses nothing).
/// AveragePool and GlobalAveragePool get their own output range by default: averaging
/// shrinks the range, and reusing the input's scale for a global pool's output tripled the
/// logit error of the small CNN in qdq_test (1.5% to 4.4%); `average_pool_shares_scale`
/// restores sharing. Add's output, or the output of a Relu/Clip that is its only reader, is
/// quantized too, so that a quantized Add has Q/DQ on both sides.
///
/// Opset: per-axis DequantizeLinear needs opset 13. A model importing opset 10 to 12 is
/// converted to 13 (ir::convert_opset) when per-channel weights are asked for and there is
/// something to quantize; when the converter refuses a node, weights fall back to per-tensor
/// scales and the report says so. Opset < 10 has no QuantizeLinear and is refused here;
/// quantize_model converts such a model first.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/quant/quant_params.hpp"
#include "inferopt/quant/tensor_range.hpp"
#include "inferopt/quant/weight_bits.hpp"

namespace inferopt::quant {

/// Weight scales: one per output channel (needs opset 13) or one per tensor.
enum class weight_granularity { per_channel, per_tensor };

struct qdq_options {
  weight_granularity weights = weight_granularity::per_channel;
  activation_scheme activations = activation_scheme::int8_symmetric;
  bool quantize_bias = true;                   ///< false: biases stay float
  /// Weight codes -(2^(bits-1) - 1)..2^(bits-1) - 1; 7 for x86 CPUs without VNNI
  /// (weight_bits.hpp). The scale of a channel is max|w| over that largest code.
  int weight_bits = full_weight_bits;
  /// true: AveragePool/GlobalAveragePool outputs reuse the input's scale (less accurate).
  bool average_pool_shares_scale = false;
  std::vector<std::string> exclude_nodes;      ///< node names left in float
  std::vector<std::string> exclude_op_types;   ///< op types left in float (`Gemm`, `Add`, ...)
  /// When not empty, only these op types are quantized (condition 1 narrowed); the others are
  /// left in float without a line in the report. `transformer_op_types` for attention models.
  std::vector<std::string> op_types;
};

/// What pays in a transformer: the linear layers (and attention's products of two
/// activations). LayerNorm, Softmax, GELU, residual Adds and embedding Gathers stay float:
/// onnxruntime has no int8 kernel that fuses them, so Q/DQ around them only adds work.
[[nodiscard]] std::vector<std::string> transformer_op_types();

/// Whether `m` is an attention model: a fused attention op (com.microsoft Attention,
/// MultiHeadAttention, ONNX Attention), or a Softmax over a product of two activations.
[[nodiscard]] bool has_attention(const ir::model& m);

/// What `quantize_qdq` did.
struct qdq_report {
  std::int64_t nodes_quantized = 0;
  std::int64_t activations_quantized = 0;  ///< Q/DQ pairs on activation tensors
  std::int64_t weights_quantized = 0;      ///< int8 weight initializers (shared weights once)
  std::int64_t biases_quantized = 0;       ///< int32 bias initializers
  int weight_bits = full_weight_bits;      ///< the weights' bits (qdq_options::weight_bits)
  std::int64_t opset = 0;                  ///< default-domain opset of the result
  bool opset_raised = false;               ///< converted to 13 for per-channel weights
  bool per_tensor_fallback = false;        ///< per-channel asked, per-tensor used (opset < 13)
  /// One line per node left in float or bias left in float, with the reason.
  std::vector<std::string> skipped;
};

/// Quantizes the main graph of `m` in place (subgraphs are left in float). New initializers
/// hold the int8 weights, int32 biases, scales and zero points; float weights that no node
/// reads any more are removed. A model with nothing to quantize is left unchanged.
/// @throws error(errc::unsupported) when the model imports a default-domain opset below 10;
///         error(errc::invalid_argument) when a range used is not a finite interval.
/// Not thread-safe with respect to `m`.
qdq_report quantize_qdq(ir::model& m, const range_table& ranges, const qdq_options& options = {});

}  // namespace inferopt::quant
