#pragma once
/// A histogram of non-negative integers (latencies in microseconds, batch sizes) that many
/// threads record into without a lock, and from which percentiles are read.
///
/// Strategy: log-linear buckets, as HdrHistogram does. Values below 64 have a bucket each
/// (so batch sizes are exact); above, each power of two is split into 32 equal buckets, so a
/// value is known to 1/32 of itself and a reported percentile (its bucket's midpoint) is
/// within 1/64 of the true one. Values up to 2^40 (12 days in microseconds) are resolved;
/// larger ones are counted in the last bucket. A record is three relaxed atomic adds and a
/// compare-exchange loop for the maximum; readers may see a record half applied, which moves
/// a percentile by one sample at most.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace inferopt::serve {

class histogram {
 public:
  static constexpr int sub_bits = 5;  // 32 buckets per power of two
  static constexpr int max_exponent = 40;
  static constexpr std::size_t bucket_count = (max_exponent - sub_bits + 1) * (std::size_t{1} << sub_bits) + (std::size_t{1} << sub_bits);

  /// The bucket of `v`.
  [[nodiscard]] static constexpr std::size_t bucket_of(std::uint64_t v) noexcept {
    constexpr std::uint64_t linear = std::uint64_t{1} << (sub_bits + 1);
    if (v < linear) return static_cast<std::size_t>(v);
    const int e = std::bit_width(v) - 1;
    if (e > max_exponent) return bucket_count - 1;
    const std::uint64_t sub = (v >> (e - sub_bits)) & ((std::uint64_t{1} << sub_bits) - 1);
    return static_cast<std::size_t>((e - sub_bits + 1) * (1 << sub_bits) + sub);
  }

  /// The smallest value in bucket `b`, and its width.
  [[nodiscard]] static constexpr std::uint64_t lower_bound(std::size_t b) noexcept {
    constexpr std::size_t linear = std::size_t{1} << (sub_bits + 1);
    if (b < linear) return b;
    const int e = static_cast<int>(b >> sub_bits) + sub_bits - 1;
    const std::uint64_t sub = b & ((std::size_t{1} << sub_bits) - 1);
    return ((std::uint64_t{1} << sub_bits) + sub) << (e - sub_bits);
  }
  [[nodiscard]] static constexpr std::uint64_t width(std::size_t b) noexcept {
    return b < (std::size_t{1} << (sub_bits + 1)) ? 1 : std::uint64_t{1} << (static_cast<int>(b >> sub_bits) - 1);
  }

  void record(std::uint64_t v) noexcept {
    buckets_[bucket_of(v)].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
    std::uint64_t seen = max_.load(std::memory_order_relaxed);
    while (v > seen && !max_.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
    }
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t sum() const noexcept { return sum_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t max() const noexcept { return max_.load(std::memory_order_relaxed); }
  [[nodiscard]] double mean() const noexcept {
    const std::uint64_t n = count();
    return n == 0 ? 0.0 : static_cast<double>(sum()) / static_cast<double>(n);
  }

  /// The q-quantile (q in [0, 1]) by nearest rank: the midpoint of the bucket holding the
  /// ceil(q n)-th smallest value, never above the maximum recorded; 0 when empty.
  [[nodiscard]] double percentile(double q) const noexcept {
    const std::uint64_t n = count();
    if (n == 0) return 0.0;
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(n))));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < bucket_count; ++b) {
      seen += buckets_[b].load(std::memory_order_relaxed);
      if (seen >= rank) {
        const double mid = static_cast<double>(lower_bound(b)) + static_cast<double>(width(b) - 1) / 2.0;
        return std::min(mid, static_cast<double>(max()));
      }
    }
    return static_cast<double>(max());
  }

  /// How many recorded values are at most `v`: exact when v + 1 starts a bucket (every v
  /// below 63, every power of two less one); otherwise it also counts the values of v's
  /// bucket above v, which are within 1/32 of it.
  [[nodiscard]] std::uint64_t count_at_most(std::uint64_t v) const noexcept {
    std::uint64_t n = 0;
    const std::size_t last = bucket_of(v);
    for (std::size_t b = 0; b <= last; ++b) n += buckets_[b].load(std::memory_order_relaxed);
    return n;
  }

  /// Per-bucket counts of the non-empty buckets, as (lower bound, count), ascending.
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> nonzero_buckets() const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (std::size_t b = 0; b < bucket_count; ++b) {
      const std::uint64_t c = buckets_[b].load(std::memory_order_relaxed);
      if (c != 0) out.emplace_back(lower_bound(b), c);
    }
    return out;
  }

 private:
  std::array<std::atomic<std::uint64_t>, bucket_count> buckets_{};
  std::atomic<std::uint64_t> count_{0}, sum_{0}, max_{0};
};

}  // namespace inferopt::serve
