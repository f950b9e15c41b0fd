#pragma once
/// Dynamic INT8 quantization: int8 weights now, activations quantized at run time, so no
/// calibration data is needed. Each linear layer on constant weights becomes the standard
/// ONNX form that onnxruntime's quantizer writes, and that its graph optimizer fuses into one
/// com.microsoft DynamicQuantizeMatMul kernel (u8 activations, s8 weights):
///
///   before:  x -> MatMul(W) -> y                  (or Gemm(x, B, C), transA = 0, alpha = beta = 1)
///
///   after:   x -> DynamicQuantizeLinear -> x_q, x_scale, x_zero_point
///            MatMulInteger(x_q, W_q, x_zero_point, W_zero_point) -> Cast(float)
///              -> Mul(x_scale * W_scale) [-> Add(C)] -> y
///
/// W_q is int8 symmetric (zero point 0) with one scale per output column (or per tensor);
/// a Gemm with transB = 1 gets its weight transposed to [K, N]. One DynamicQuantizeLinear
/// serves every quantized layer reading the same activation (Q, K and V of attention).
/// Only MatMul and Gemm pay off this way: the rest of the graph stays float.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/quant/qdq.hpp"

namespace inferopt::quant {

struct dynamic_options {
  weight_granularity weights = weight_granularity::per_channel;
  std::vector<std::string> exclude_nodes;     ///< node names left in float
  std::vector<std::string> exclude_op_types;  ///< `MatMul` or `Gemm`: left in float
  /// 7 for x86 CPUs without VNNI (weight_bits.hpp): with 8, onnxruntime's DynamicQuantizeMatMul
  /// there saturated and ViT-B/16's output cosine with float fell to 0.978 (0.9998 with 7).
  int weight_bits = full_weight_bits;
};

/// What `quantize_dynamic` did.
struct dynamic_report {
  std::int64_t nodes_quantized = 0;
  std::int64_t activations_quantized = 0;  ///< DynamicQuantizeLinear nodes added
  std::int64_t weights_quantized = 0;      ///< int8 weight initializers (shared weights once)
  int weight_bits = full_weight_bits;      ///< the weights' bits (dynamic_options::weight_bits)
  std::int64_t opset = 0;                  ///< default-domain opset of the result
  bool opset_raised = false;               ///< converted to 13 (DynamicQuantizeLinear needs 11)
  /// One line per MatMul or Gemm left in float, with the reason.
  std::vector<std::string> skipped;
};

/// Quantizes the main graph of `m` in place; float weights no node reads any more are
/// removed. A model importing a default-domain opset below 11 is converted to 13 first.
/// @throws error(errc::unsupported) when that conversion fails; error(errc::invalid_model)
///         when a weight holds NaN or infinity. `m` is left as it was when anything throws.
/// Not thread-safe with respect to `m`.
dynamic_report quantize_dynamic(ir::model& m, const dynamic_options& options = {});

}  // namespace inferopt::quant
