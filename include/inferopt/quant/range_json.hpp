#pragma once
/// The range table as JSON, with the quantization parameters each range gives:
///
///   {
///     "conv1_relu": {"min": 0.0, "max": 5.2, "scale": 0.0409, "zero_point": 0, "dtype": "int8"},
///     ...
///   }
///
/// One object per tensor, keyed by tensor name, in name order, fields in the order above.
/// `scale` is the float32 value QuantizeLinear would use (written as the double it widens to,
/// so it reads back exactly); `zero_point` and `dtype` follow the activation scheme (see
/// activation_params).

#include <filesystem>
#include <string>

#include "inferopt/quant/quant_params.hpp"
#include "inferopt/quant/tensor_range.hpp"

namespace inferopt::quant {

/// The JSON text (indented by 2, newline-terminated).
/// @throws error(errc::invalid_argument) for a range that is not a finite interval, naming the
///         tensor.
[[nodiscard]] std::string format_range_json(const range_table& ranges, activation_scheme scheme);

/// Writes `format_range_json(ranges, scheme)` to `path` atomically.
/// @throws what format_range_json throws; error(errc::io) when writing fails.
void write_range_json(const range_table& ranges, activation_scheme scheme, const std::filesystem::path& path);

}  // namespace inferopt::quant
