#pragma once
/// Calibrators: turn a tensor's statistics into the range quantization will represent.
///
/// - min_max: the observed [min, max] (or the moving averages of the per-batch min and max).
/// - percentile: the range holding `percentile` % of the values. Symmetric: on the |x|
///   histogram, threshold t = upper edge of the bin where the cumulative count first reaches
///   the percentile. Asymmetric: on the x histogram, (100 - percentile) / 2 % cut from each
///   tail. Bounds never go past the observed min and max.
/// - entropy: TensorRT's KL-divergence search on the |x| histogram (see `entropy_threshold`).
/// - mse: the threshold minimizing the histogram's expected squared error of symmetric
///   quantization, rounding plus clipping (see `mse_threshold`).
///
/// Symmetric results are [-t, t], except that a side the data never reaches is clamped to 0
/// (a post-ReLU tensor gives [0, t]); a symmetric consumer reads max(|min|, |max|) = t either way.

#include <cstddef>
#include <cstdint>
#include <span>

#include "inferopt/quant/calibration_state.hpp"
#include "inferopt/quant/statistics.hpp"
#include "inferopt/quant/tensor_range.hpp"

namespace inferopt::quant {

enum class calibration_method { min_max, percentile, entropy, mse };

struct calibrator_options {
  calibration_method method = calibration_method::min_max;
  /// percentile only: asymmetric cuts both tails of the x histogram; entropy and mse are
  /// symmetric by construction and ignore this.
  bool symmetric = true;
  /// min_max only: use the moving averages of per-batch min and max.
  bool moving_average = false;
  /// percentile: the share of values kept, in (0, 100].
  double percentile = 99.99;
  /// entropy: levels of the positive half of the quantized grid (128 for int8) and the first
  /// candidate bin count. mse: positive levels of the grid (step = t / levels).
  std::size_t quantized_levels = 128;
};

/// Parses `minmax`, `percentile`, `entropy` or `mse`. @throws error(errc::invalid_argument).
[[nodiscard]] calibration_method parse_calibration_method(std::string_view text);

/// The range of one tensor. A tensor without finite values gets [0, 0].
/// @throws error(errc::invalid_argument) for a percentile outside (0, 100] or zero levels.
[[nodiscard]] tensor_range compute_range(const tensor_statistics& stats, const calibrator_options& options);

/// `compute_range` for every tensor of the state.
[[nodiscard]] range_table compute_ranges(const calibration_state& state, const calibrator_options& options);

/// Smallest threshold t (a bin's upper edge) such that the bins below t hold at least
/// `percentile` % of the counts; 0 for an empty histogram.
[[nodiscard]] double percentile_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width,
                                          double percentile);

/// TensorRT's entropy calibration. For each candidate i = levels .. bins (bins kept):
///   P = the first i bins, with the outliers (bins >= i) added to P[i-1];
///   Q = the first i bins *without* the outliers, merged into `levels` groups (bin k joins
///       group floor(k * levels / i)), each group's count spread evenly over its bins that are
///       nonzero in the histogram, zero elsewhere;
///   KL(P || Q) over the normalized distributions, summing where P > 0, with Q floored at 1e-12
///   (Q can be 0 where P is not: the last bin when it holds only outliers).
/// Q comes from the clipped bins, not from P: quantizing P itself would make candidate
/// i = levels an identity (KL 0) and always win. Returns the i with the smallest KL (the
/// first on ties); bins < levels gives bins.
[[nodiscard]] std::size_t entropy_best_bin_count(std::span<const std::uint64_t> abs_histogram, std::size_t levels);

/// (best i + 0.5) * bin_width, TensorRT's threshold for the best candidate, searched on the
/// histogram with bin 0 counted as bin 1 (the exact zeros of a post-ReLU tensor would
/// otherwise dominate the divergence; NVIDIA's histogram calibrator does the same); 0 for an
/// empty histogram.
[[nodiscard]] double entropy_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width,
                                       std::size_t levels);

/// Expected squared error of quantizing the histogram symmetrically at threshold t with step
/// s = t / levels, each bin's values taken at the bin centre c: c <= t costs the uniform
/// rounding noise s^2 / 12, c > t the clipping error (c - t)^2.
[[nodiscard]] double mse_at_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width,
                                      std::size_t levels, double threshold);

/// The candidate t = k * bin_width, k = 1 .. bins, with the smallest `mse_at_threshold` (the
/// smallest t on ties); 0 for an empty histogram.
[[nodiscard]] double mse_threshold(std::span<const std::uint64_t> abs_histogram, double bin_width,
                                   std::size_t levels);

}  // namespace inferopt::quant
