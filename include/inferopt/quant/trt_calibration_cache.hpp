#pragma once
/// TensorRT's calibration cache: the text file an IInt8Calibrator reads back through
/// readCalibrationCache (and ONNX Runtime's TensorRT provider reads as its INT8 table).
///
///   TRT-8601-EntropyCalibration2
///   input: 3c010204
///   conv1_relu: 3d0f5c29
///
/// The first line names the TensorRT version and calibrator; each further line is a tensor
/// name, ": ", and the bit pattern of the float32 scale as 8 lower-case hex digits (the
/// uint32 written most significant digit first). The scale is symmetric int8:
/// max(|min|, |max|) / 127, so TensorRT's dynamic range is scale * 127.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "inferopt/quant/tensor_range.hpp"

namespace inferopt::quant {

/// TensorRT 8.6.1 with the entropy calibrator 2; a cache whose header names another
/// version or calibrator is ignored by TensorRT, so callers targeting one can pass its own.
inline constexpr std::string_view default_trt_cache_header = "TRT-8601-EntropyCalibration2";

/// A parsed cache.
struct trt_calibration_cache {
  std::string header;
  std::map<std::string, float, std::less<>> scales;  ///< by tensor name
};

/// The cache text for `ranges` (one line per tensor, in name order, newline-terminated).
/// @throws error(errc::invalid_argument) for a range that is not a finite interval, naming the
///         tensor, or for a tensor name holding a line break (the format cannot carry it).
[[nodiscard]] std::string format_trt_calibration_cache(const range_table& ranges,
                                                       std::string_view header = default_trt_cache_header);

/// Writes `format_trt_calibration_cache(ranges, header)` to `path` atomically.
/// @throws what format_trt_calibration_cache throws; error(errc::io) when writing fails.
void write_trt_calibration_cache(const range_table& ranges, const std::filesystem::path& path,
                                 std::string_view header = default_trt_cache_header);

/// Parses cache text. The name ends at the last ": " of a line, since TensorRT's own names
/// may hold spaces and colons; the value is 1 to 8 hex digits (TensorRT writes a zero scale as
/// `0`). Empty lines are skipped.
/// @throws error(errc::invalid_argument) naming the line that does not parse.
[[nodiscard]] trt_calibration_cache parse_trt_calibration_cache(std::string_view text);

/// Reads and parses a cache file. @throws error(errc::io) when it cannot be read.
[[nodiscard]] trt_calibration_cache read_trt_calibration_cache(const std::filesystem::path& path);

}  // namespace inferopt::quant
