#pragma once
// The executor's native int8 kernels (private to src/runtime). The session rewrites the QDQ
// groups of a quantized model into them when it builds its own copy of the graph
// (int8_groups.hpp), the way onnxruntime fuses DequantizeLinear -> op -> QuantizeLinear into
// QLinearConv and QLinearAdd; saved models never contain them. Their int8 activations are
// channels-last ([N, H, W, C]), the layout of oneDNN's VNNI / AVX-512 / AVX2 int8
// convolutions, so a chain of them reorders only where it starts and ends.
//
// All in the executor's domain inferopt.cpu, inputs in QLinearConv's and QLinearAdd's order,
// every input but the activations a constant initializer:
// - QLinearConvNhwc (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
//   y_zero_point, B): x [N, H, W, C] uint8 or int8, w [M, C/group, kh, kw] int8 with a zero
//   point of 0 (per tensor, or per output channel), B int32 in units of x_scale * w_scale;
//   QLinearConv's attributes and `activation` "Relu". y [N, OH, OW, M].
// - QLinearAdd (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
//   a and b of one shape and type (any layout), optional `activation` "Relu".
// - MaxPoolNhwc: MaxPool of a uint8 or int8 [N, H, W, C] tensor (max commutes with the
//   monotonic quantization, so a MaxPool between equal Q/DQ parameters needs no float).
// - QLinearGlobalAveragePoolNhwc (x, x_scale, x_zero_point, y_scale, y_zero_point): the
//   requantized mean of each channel over H x W; y [N, 1, 1, C].
// - QuantizeLinearNhwc (x, y_scale, y_zero_point): QuantizeLinear of float [N, C, H, W] into
//   channels-last int8 [N, H, W, C], where a chain starts.
// - QGemm (a, a_scale, a_zero_point, b, b_scale, b_zero_point, C), attribute transB: a
//   classifier's Gemm on int8 A [M, K] and B, float32 output (like com.microsoft QGemm
//   without y_scale); C int32 in units of a_scale * b_scale.
//
// Numerics: onnxruntime's. Products accumulate exactly in int32; the requantization is in
// float32 (y = round_half_even((acc + B) * x_scale * w_scale / y_scale) + y_zero_point,
// saturated), so an output differs from onnxruntime's QLinearConv by at most one unit where
// the float products round differently near a tie. A fused Relu clamps at y_zero_point, which
// equals Relu before QuantizeLinear exactly. On CPUs without VNNI, uint8 x int8 products are
// summed in pairs in 16 bits first (vpmaddubsw, as onnxruntime's AVX2 kernels do), which can
// saturate unless the weights use 7 bits (onnxruntime's reduce_range); int8 sources are taken
// only with VNNI (int8_conv_runs).
#include <cstdint>
#include <optional>
#include <vector>

#include "inferopt/runtime/kernel.hpp"

namespace inferopt::ir {
class node;
class value;
}

namespace inferopt::runtime::nn {

/// The values of `v` when it is a constant initializer (not a graph input) of float32 scales;
/// nullopt otherwise.
[[nodiscard]] std::optional<std::vector<float>> constant_scales(const ir::value* v);

/// The values of `v` when it is a constant initializer (not a graph input) of uint8, int8 or
/// int32 zero points; nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int32_t>> constant_zero_points(const ir::value* v);

/// The one value of constant input `index` of the node being built: a scale, or a zero point.
/// @throws via info.unsupported when it is not one constant value of such a type.
[[nodiscard]] float scalar_scale(const kernel_build_info& info, std::size_t index);
[[nodiscard]] std::int32_t scalar_zero_point(const kernel_build_info& info, std::size_t index);

/// Whether oneDNN runs int8 convolution `conv` (an ONNX Conv or QLinearConvNhwc node, whose
/// attributes are read; weights of `w_dims`) with a JIT kernel on channels-last activations
/// of `x_shape` ([N, C, H, W]; dims unknown before a run as representative values), from
/// `x_type` to `y_type` (uint8 or int8). False without oneDNN, and for int8 sources on CPUs
/// without VNNI (oneDNN would halve their weights).
[[nodiscard]] bool int8_conv_runs(const ir::node& conv, const std::vector<std::int64_t>& w_dims,
                                  const std::vector<std::int64_t>& x_shape, data_type x_type, data_type y_type);

/// Whether oneDNN runs QGemm of uint8 A [M, K] and int8 B [K, N] with an optimized kernel.
[[nodiscard]] bool int8_gemm_runs(std::int64_t k, std::int64_t n);

void register_int8_conv_kernels(kernel_registry& r);
void register_int8_add_kernels(kernel_registry& r);
void register_int8_pool_kernels(kernel_registry& r);
void register_int8_gemm_kernels(kernel_registry& r);
void register_int8_quantize_kernels(kernel_registry& r);

}  // namespace inferopt::runtime::nn
