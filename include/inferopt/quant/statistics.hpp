#pragma once
/// Streaming statistics of one tensor over calibration batches: min/max, their moving
/// averages, and histograms of |x| and of x. Raw activations are never stored, and two
/// statistics of the same tensor merge exactly.
///
/// Moving averages. Each batch's min and max are kept, in order (16 bytes a batch), and the
/// averages are computed from them when asked. Merging appends `later`'s, so any split of the
/// batches into shards, merged in order, gives the averages of a single pass bit for bit; an
/// average carried through the merge would differ from it by rounding.
///
/// Range strategy. Both histograms cover a range that is a power of two, R = 2^e, the
/// smallest one with |x| < R for every finite x seen: the |x| histogram covers [0, R) and the
/// x histogram [-R, R), each with `bins` equal bins. When a batch holds a larger |x|, R doubles
/// (as often as needed) by adding adjacent bin pairs, which is exact: the bin of x at range 2R
/// is the merge of its bins at range R. Because R is always a power of two, two statistics
/// with different ranges meet at the larger one by the same merge, so any split of the batches
/// into shards, merged, gives the histograms of a single pass, count for count. The price is
/// resolution: the largest |x| lies in the upper half of the range, so between bins/2 and bins
/// bins hold data.
///
/// Bin of x: |x| histogram floor(|x| / R * bins); x histogram bins/2 + floor(x / R * bins/2).
/// Dividing by R is exact (a power of two), and for float, float16 and bfloat16 inputs the
/// product with the bin count is exact in double, so counts do not depend on rounding.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferopt::quant {

struct statistics_options {
  /// Bins of each histogram; a multiple of 4 (the x histogram merges pairs around its centre)
  /// in [4, 2^24] (keeps the bin products exact in double).
  std::size_t bins = 2048;
  /// Weight c of a new batch in the moving averages: avg = avg + c * (batch - avg).
  double averaging_constant = 0.01;

  friend bool operator==(const statistics_options&, const statistics_options&) = default;
};

/// Statistics of one tensor. Not thread-safe: give each thread its own and `merge` them.
class tensor_statistics {
 public:
  /// @throws error(errc::invalid_argument) for a bin count outside the documented set or an
  ///         averaging constant outside (0, 1].
  explicit tensor_statistics(statistics_options options = {});

  /// Adds one batch (one computed tensor). NaN and ±Inf are counted apart and otherwise ignored.
  void add_batch(std::span<const float> values);
  /// Double inputs: bins are exact only where x / R * bins is representable (see above).
  void add_batch(std::span<const double> values);

  /// Adds the batches of `later` as if they had come after this one's batches, in order.
  /// Histograms, counts, min and max are exact and order-free. The moving averages are
  /// order-dependent by nature: the result is the average over this sequence followed by
  /// `later`'s, bit for bit what a single pass over them gives.
  /// @throws error(errc::invalid_argument) when the options differ.
  void merge(const tensor_statistics& later);

  [[nodiscard]] const statistics_options& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t bins() const noexcept { return options_.bins; }
  /// Finite values seen.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t nan_count() const noexcept { return nan_count_; }
  [[nodiscard]] std::uint64_t inf_count() const noexcept { return inf_count_; }
  /// Batches that held at least one finite value (the moving averages' sequence length).
  [[nodiscard]] std::uint64_t batches() const noexcept { return batch_mins_.size(); }

  /// Smallest and largest finite values; 0 when none was seen.
  [[nodiscard]] double min() const noexcept { return min_; }
  [[nodiscard]] double max() const noexcept { return max_; }
  [[nodiscard]] double abs_max() const noexcept;
  /// Exponential moving averages of the per-batch min and max, started at the first batch's:
  /// m_1 = b_1, m_k = m_{k-1} + c * (b_k - m_{k-1}). 0 when no batch was seen.
  [[nodiscard]] double moving_min() const noexcept { return moving_average(batch_mins_); }
  [[nodiscard]] double moving_max() const noexcept { return moving_average(batch_maxs_); }

  /// True once a nonzero finite value was seen; before that the range is undefined and every
  /// count sits in the zero bins.
  [[nodiscard]] bool has_range() const noexcept { return has_range_; }
  /// e with R = 2^e; meaningful only when `has_range`.
  [[nodiscard]] int range_exponent() const noexcept { return exponent_; }
  /// R, or 0 without a range.
  [[nodiscard]] double range() const noexcept;
  /// Width of a bin of the |x| histogram (R / bins); 0 without a range.
  [[nodiscard]] double abs_bin_width() const noexcept;
  /// Width of a bin of the x histogram (2R / bins); its bin i starts at -R + i * width.
  [[nodiscard]] double signed_bin_width() const noexcept;
  [[nodiscard]] std::span<const std::uint64_t> abs_histogram() const noexcept { return abs_hist_; }
  [[nodiscard]] std::span<const std::uint64_t> histogram() const noexcept { return signed_hist_; }

  /// Appends this statistics' binary form (see calibration_state.hpp for the layout).
  void serialize_to(std::string& out) const;
  /// Reads one statistics written by `serialize_to` from the front of `in`, advancing it.
  /// @throws error(errc::invalid_argument) for truncated or inconsistent bytes.
  [[nodiscard]] static tensor_statistics parse_from(std::string_view& in);

  /// Same options, counts, histograms and range, and bit-identical min, max and averages.
  friend bool operator==(const tensor_statistics&, const tensor_statistics&) = default;

 private:
  template <class T>
  void add_values(std::span<const T> values);
  /// Doubles the range until it is 2^exponent (no-op when already as large).
  void grow_to(int exponent);
  [[nodiscard]] double moving_average(const std::vector<double>& sequence) const noexcept;

  statistics_options options_;
  std::uint64_t count_ = 0;
  std::uint64_t nan_count_ = 0;
  std::uint64_t inf_count_ = 0;
  double min_ = 0.0;
  double max_ = 0.0;
  // Each batch's min and max, in batch order: the moving averages' inputs.
  std::vector<double> batch_mins_;
  std::vector<double> batch_maxs_;
  bool has_range_ = false;
  int exponent_ = 0;
  std::vector<std::uint64_t> abs_hist_;     // size bins; every finite |x| < 2^exponent_
  std::vector<std::uint64_t> signed_hist_;  // size bins; centre bin bins/2 starts at 0
};

}  // namespace inferopt::quant
