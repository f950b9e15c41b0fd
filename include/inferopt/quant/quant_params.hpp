#pragma once
/// Turning a calibrated range into the scale and zero point of a QuantizeLinear.

#include <cstdint>
#include <string_view>

#include "inferopt/ir/data_type.hpp"
#include "inferopt/quant/tensor_range.hpp"

namespace inferopt::quant {

/// How activations are mapped to integers.
enum class activation_scheme {
  int8_symmetric,    ///< int8, zero point 0, scale = max(|min|, |max|) / 127
  uint8_asymmetric,  ///< uint8, range widened to include 0, scale = (max - min) / 255
};

/// `int8-symmetric` or `uint8-asymmetric` (the CLI spelling).
[[nodiscard]] std::string_view to_string(activation_scheme s) noexcept;

/// The parameters of one per-tensor quantization: real = (q - zero_point) * scale.
struct quant_params {
  float scale = 1.0f;         ///< positive and finite
  std::int32_t zero_point = 0;
  ir::data_type dtype = ir::data_type::int8;  ///< int8 or uint8
};

/// Quantization parameters for a calibrated range. Computed in double and rounded once to
/// float, the type QuantizeLinear reads. A range of zero width (or an all-zero one) gets scale
/// 1, so every value still maps to the zero point without dividing by zero. The uint8 zero
/// point is round(-min / scale) (half to even) clamped to [0, 255].
/// @throws error(errc::invalid_argument) when the range is not finite or min > max.
[[nodiscard]] quant_params activation_params(const tensor_range& r, activation_scheme scheme);

/// The symmetric int8 scale max(|min|, |max|) / largest_code as float (1 for an all-zero
/// range); with 127, the scale TensorRT's calibration cache stores (63: 7-bit weights).
/// @throws error(errc::invalid_argument) when the range is not finite or min > max.
[[nodiscard]] float symmetric_int8_scale(const tensor_range& r, int largest_code = 127);

}  // namespace inferopt::quant
