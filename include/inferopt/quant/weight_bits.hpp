#pragma once
// How many bits the int8 weights of static and dynamic quantization use, and the choice that
// suits the CPU a model will run on.
//
// x86 CPUs without VNNI multiply uint8 activations by int8 weights with VPMADDUBSW, which adds
// two products in int16 and saturates past 32767; int8 activations are shifted to uint8 first.
// onnxruntime's QLinearConv, QLinearMatMul and DynamicQuantizeMatMul use such kernels there.
// 2 x 255 x 127 does not fit in int16, 2 x 255 x 63 does: 7-bit weights (codes -63..63) keep
// every sum exact at the cost of one bit of weight precision, which PyTorch's fbgemm and
// onnxruntime's reduce_range also pay. VNNI (vpdpbusd) sums into int32, and ARM's dot-product
// instructions are exact, so the full 8 bits cost nothing there.

#include "inferopt/core/cpu_features.hpp"

namespace inferopt::quant {

inline constexpr int full_weight_bits = 8;     ///< codes -127..127
inline constexpr int reduced_weight_bits = 7;  ///< codes -63..63

/// The largest code of a symmetric `bits`-bit weight: 2^(bits-1) - 1 (127 for 8 bits).
/// @throws error(errc::invalid_argument) unless 2 <= bits <= 8.
[[nodiscard]] int largest_weight_code(int bits);

/// The bits whose products onnxruntime's int8 kernels sum exactly on `cpu`: 7 on an x86 CPU
/// without VNNI, 8 on one with it and on other architectures.
[[nodiscard]] int weight_bits_for(const cpu_features& cpu) noexcept;

}  // namespace inferopt::quant
