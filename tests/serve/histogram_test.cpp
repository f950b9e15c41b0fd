// serve::histogram: bucket bounds, percentiles against exact ranks on skewed data, and
// concurrent records that all arrive.
#include "inferopt/serve/histogram.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

using inferopt::serve::histogram;

TEST_CASE("histogram buckets tile the integers without gaps and within 1/32 of a value", "[serve][histogram]") {
  for (std::size_t b = 0; b + 1 < histogram::bucket_count; ++b) {
    INFO("bucket " << b);
    REQUIRE(histogram::lower_bound(b) + histogram::width(b) == histogram::lower_bound(b + 1));
    REQUIRE(histogram::bucket_of(histogram::lower_bound(b)) == b);
    REQUIRE(histogram::bucket_of(histogram::lower_bound(b + 1) - 1) == b);
    REQUIRE(static_cast<double>(histogram::width(b)) <= std::max(1.0, histogram::lower_bound(b) / 32.0));
  }
  CHECK(histogram::bucket_of(std::uint64_t{1} << 62) == histogram::bucket_count - 1);
}

TEST_CASE("histogram percentiles are within 1/64 of the exact nearest rank", "[serve][histogram]") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(std::log(2000.0), 1.0);  // microseconds, long tail
  histogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<std::uint64_t>(latency(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (const double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const std::size_t rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()))));
    const double exact = static_cast<double>(values[rank - 1]);
    INFO("q " << q << " exact " << exact << " got " << h.percentile(q));
    CHECK(std::abs(h.percentile(q) - exact) <= exact / 64.0 + 0.5);
  }
  CHECK(h.count() == values.size());
  CHECK(h.max() == values.back());
  CHECK(h.percentile(1.0) <= static_cast<double>(values.back()));
}

TEST_CASE("histogram counts small values exactly", "[serve][histogram]") {
  histogram h;
  for (std::uint64_t batch : {1, 4, 4, 8, 8, 8, 16, 63}) h.record(batch);
  CHECK(h.count_at_most(3) == 1);
  CHECK(h.count_at_most(4) == 3);
  CHECK(h.count_at_most(8) == 6);
  CHECK(h.count_at_most(62) == 7);
  CHECK(h.percentile(0.5) == 8.0);
  CHECK(h.sum() == 112);
  CHECK(histogram().percentile(0.99) == 0.0);
}

TEST_CASE("histogram loses no record from concurrent threads", "[serve][histogram]") {
  histogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (std::uint64_t i = 0; i < 20000; ++i) h.record(i % 1000 + static_cast<std::uint64_t>(t));
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(h.count() == 80000);
  CHECK(h.max() == 999 + 3);
  std::uint64_t total = 0;
  for (const auto& [low, n] : h.nonzero_buckets()) total += n;
  CHECK(total == 80000);
}
