// tensor_statistics: streaming min/max, moving averages and the two histograms whose range
// grows by merging bin pairs. Counts are integers, so histogram checks are exact equality.

#include "inferopt/quant/statistics.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"

using namespace inferopt;
using quant::statistics_options;
using quant::tensor_statistics;

namespace {

statistics_options small_bins(std::size_t bins = 16) {
  statistics_options o;
  o.bins = bins;
  return o;
}

std::vector<float> random_values(std::size_t n, float scale, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

/// The histograms built directly at range 2^exponent, independently of tensor_statistics.
std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>> direct_histograms(const std::vector<float>& values,
                                                                                   std::size_t bins, int exponent) {
  std::vector<std::uint64_t> abs_hist(bins, 0), signed_hist(bins, 0);
  const double range = std::ldexp(1.0, exponent);
  for (float v : values) {
    abs_hist[static_cast<std::size_t>(std::floor(std::fabs(v) / range * bins))] += 1;
    signed_hist[static_cast<std::size_t>(std::floor((v + range) / (2.0 * range) * bins))] += 1;
  }
  return {abs_hist, signed_hist};
}

}  // namespace

TEST_CASE("tensor statistics track min, max and counts, and keep NaN and Inf apart", "[quant][statistics]") {
  tensor_statistics s(small_bins());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> batch = {0.5f, -3.0f, nan, 2.0f, inf, -inf, 1.0f};
  s.add_batch(batch);
  CHECK(s.count() == 4);
  CHECK(s.nan_count() == 1);
  CHECK(s.inf_count() == 2);
  CHECK(s.min() == -3.0);
  CHECK(s.max() == 2.0);
  CHECK(s.abs_max() == 3.0);
  // 3 < 2^2: the range is 4, the |x| bins are 0.25 wide.
  REQUIRE(s.has_range());
  CHECK(s.range_exponent() == 2);
  CHECK(s.abs_bin_width() == 0.25);
  CHECK(s.abs_histogram()[2] == 1);   // 0.5
  CHECK(s.abs_histogram()[4] == 1);   // 1.0
  CHECK(s.abs_histogram()[8] == 1);   // 2.0
  CHECK(s.abs_histogram()[12] == 1);  // 3.0
  // x bins are 0.5 wide from -4: -3 -> 2, 0.5 -> 9, 1 -> 10, 2 -> 12.
  CHECK(s.histogram()[2] == 1);
  CHECK(s.histogram()[9] == 1);
  CHECK(s.histogram()[10] == 1);
  CHECK(s.histogram()[12] == 1);
}

TEST_CASE("a power of two lands in the bin above it, as the range is half-open", "[quant][statistics]") {
  tensor_statistics s(small_bins());
  const std::vector<float> batch = {1.0f};
  s.add_batch(batch);
  CHECK(s.range_exponent() == 1);  // 1 < 2
  CHECK(s.abs_histogram()[8] == 1);
  CHECK(s.histogram()[12] == 1);
}

TEST_CASE("growing the range by merging bin pairs equals histograms built at the final range",
          "[quant][statistics]") {
  const std::size_t bins = 64;
  const std::vector<float> small = random_values(500, 0.1f, 1);
  const std::vector<float> medium = random_values(500, 2.0f, 2);
  const std::vector<float> large = random_values(500, 40.0f, 3);
  tensor_statistics grown(small_bins(bins));
  grown.add_batch(small);
  const int first_exponent = grown.range_exponent();
  grown.add_batch(medium);
  grown.add_batch(large);
  CHECK(grown.range_exponent() > first_exponent + 4);  // several doublings happened

  std::vector<float> all = small;
  all.insert(all.end(), medium.begin(), medium.end());
  all.insert(all.end(), large.begin(), large.end());
  const auto [abs_hist, signed_hist] = direct_histograms(all, bins, grown.range_exponent());
  CHECK(std::vector<std::uint64_t>(grown.abs_histogram().begin(), grown.abs_histogram().end()) == abs_hist);
  CHECK(std::vector<std::uint64_t>(grown.histogram().begin(), grown.histogram().end()) == signed_hist);

  tensor_statistics one_batch(small_bins(bins));
  one_batch.add_batch(all);
  CHECK(std::ranges::equal(one_batch.abs_histogram(), grown.abs_histogram()));
  CHECK(std::ranges::equal(one_batch.histogram(), grown.histogram()));
}

TEST_CASE("moving averages follow m = m + c * (batch - m) from the first batch", "[quant][statistics]") {
  statistics_options o = small_bins();
  o.averaging_constant = 0.5;
  tensor_statistics s(o);
  s.add_batch(std::vector<float>{-1.0f, 1.0f});
  s.add_batch(std::vector<float>{-3.0f, 5.0f});
  s.add_batch(std::vector<float>{0.0f, 2.0f});
  // min: -1, then -1 + 0.5 * (-3 + 1) = -2, then -2 + 0.5 * (0 + 2) = -1.
  // max: 1, then 1 + 0.5 * (5 - 1) = 3, then 3 + 0.5 * (2 - 3) = 2.5.
  CHECK(s.moving_min() == -1.0);
  CHECK(s.moving_max() == 2.5);
  CHECK(s.batches() == 3);
  // A batch of only NaN is not part of the averaged sequence.
  s.add_batch(std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
  CHECK(s.batches() == 3);
  CHECK(s.moving_max() == 2.5);
}

TEST_CASE("merging statistics equals one pass bit for bit: counts, min and max, moving averages",
          "[quant][statistics]") {
  std::vector<std::vector<float>> batches;
  for (std::uint32_t b = 0; b < 7; ++b) batches.push_back(random_values(300, 0.05f * float(1u << (2 * (b % 4))), 10 + b));
  tensor_statistics single;
  for (const auto& b : batches) single.add_batch(b);

  tensor_statistics first, second;
  for (std::size_t b = 0; b < 3; ++b) first.add_batch(batches[b]);
  for (std::size_t b = 3; b < batches.size(); ++b) second.add_batch(batches[b]);
  first.merge(second);

  CHECK(std::ranges::equal(first.abs_histogram(), single.abs_histogram()));
  CHECK(std::ranges::equal(first.histogram(), single.histogram()));
  CHECK(first.range_exponent() == single.range_exponent());
  CHECK(first.min() == single.min());
  CHECK(first.max() == single.max());
  CHECK(first.count() == single.count());
  CHECK(first.batches() == single.batches());
  CHECK(first.moving_min() == single.moving_min());
  CHECK(first.moving_max() == single.moving_max());
  CHECK(first == single);
}

TEST_CASE("a tensor of zeros has no range and counts in the zero bins, which survive growth",
          "[quant][statistics]") {
  tensor_statistics s(small_bins());
  s.add_batch(std::vector<float>{0.0f, -0.0f, 0.0f});
  CHECK_FALSE(s.has_range());
  CHECK(s.range() == 0.0);
  CHECK(s.abs_histogram()[0] == 3);
  CHECK(s.histogram()[8] == 3);
  s.add_batch(std::vector<float>{5.0f});
  CHECK(s.abs_histogram()[0] == 3);
  CHECK(s.histogram()[8] == 3);
  CHECK(s.min() == 0.0);
}

TEST_CASE("tensor statistics refuse bin counts that cannot merge exactly and mismatched merges",
          "[quant][statistics]") {
  CHECK_THROWS_AS(tensor_statistics(small_bins(6)), error);
  CHECK_THROWS_AS(tensor_statistics(small_bins(0)), error);
  statistics_options bad_constant;
  bad_constant.averaging_constant = 0.0;
  CHECK_THROWS_AS(tensor_statistics(bad_constant), error);
  tensor_statistics a(small_bins(16));
  CHECK_THROWS_AS(a.merge(tensor_statistics(small_bins(32))), error);
}
