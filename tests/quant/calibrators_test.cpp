// Calibrators on hand-made histograms whose thresholds are worked out in the comments, plus
// independent brute-force references for the entropy and MSE searches.

#include "inferopt/quant/calibrators.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"

using namespace inferopt;
using namespace inferopt::quant;

namespace {

using histogram = std::vector<std::uint64_t>;

/// TensorRT's entropy search written out step by step as its slides describe it (P with the
/// outliers in its last bin, Q from the clipped bins, expanded over the nonzero bins).
std::size_t reference_entropy_best(const histogram& h, std::size_t levels) {
  std::size_t best = h.size();
  double best_kl = std::numeric_limits<double>::infinity();
  for (std::size_t i = levels; i <= h.size(); ++i) {
    std::vector<double> p(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i));
    for (std::size_t k = i; k < h.size(); ++k) p[i - 1] += static_cast<double>(h[k]);
    std::vector<double> group_sum(levels, 0.0), group_nonzero(levels, 0.0);
    for (std::size_t k = 0; k < i; ++k) {
      group_sum[k * levels / i] += static_cast<double>(h[k]);
      group_nonzero[k * levels / i] += h[k] != 0 ? 1.0 : 0.0;
    }
    std::vector<double> q(i, 0.0);
    for (std::size_t k = 0; k < i; ++k) {
      if (h[k] != 0) q[k] = group_sum[k * levels / i] / group_nonzero[k * levels / i];
    }
    double ps = 0.0, qs = 0.0;
    for (std::size_t k = 0; k < i; ++k) ps += p[k], qs += q[k];
    double kl = 0.0;
    for (std::size_t k = 0; k < i; ++k) {
      if (p[k] > 0.0) kl += p[k] / ps * std::log((p[k] / ps) / std::max(q[k] / qs, 1e-12));
    }
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return best;
}

/// ONNX Runtime's entropy candidates (calibrate.py, get_entropy_threshold): half-widths
/// i = num_quantized_bins // 2 .. num_bins // 2 around the centre of a histogram of x over
/// [-max|x|, max|x|]. Its defaults num_bins = num_quantized_bins = 128 leave exactly one.
std::size_t ort_candidate_count(std::size_t num_bins, std::size_t num_quantized_bins) {
  return num_bins / 2 - num_quantized_bins / 2 + 1;
}

}  // namespace

TEST_CASE("percentile picks the upper edge of the bin reaching the share", "[quant][calibrators]") {
  const histogram h = {50, 30, 10, 5, 3, 1, 1, 0};  // 100 values, bins 1 wide
  CHECK(percentile_threshold(h, 1.0, 90.0) == 3.0);  // 50 + 30 + 10 = 90 in bins 0..2
  CHECK(percentile_threshold(h, 1.0, 99.0) == 6.0);  // 99 in bins 0..5
  CHECK(percentile_threshold(h, 1.0, 100.0) == 7.0);
  CHECK(percentile_threshold(histogram(8, 0), 1.0, 99.0) == 0.0);
}

TEST_CASE("percentile on statistics is symmetric on |x| and cuts both tails of x when asymmetric",
          "[quant][calibrators]") {
  statistics_options o;
  o.bins = 16;
  tensor_statistics s(o);
  std::vector<float> values(98, 0.5f);
  values.push_back(-7.0f);
  values.push_back(3.0f);
  s.add_batch(values);  // range 8: |x| bins 0.5 wide, x bins 1 wide from -8
  calibrator_options c;
  c.method = calibration_method::percentile;
  c.percentile = 98.0;
  // 98 of 100 |x| are 0.5, in bin 1 ([0.5, 1)): t = 1.
  tensor_range r = compute_range(s, c);
  CHECK(r.min == -1.0);
  CHECK(r.max == 1.0);
  c.symmetric = false;
  // One value (1%) may go from each tail: -7 and 3 are cut, the rest sit in x bin [0, 1).
  r = compute_range(s, c);
  CHECK(r.min == 0.0);
  CHECK(r.max == 1.0);
}

TEST_CASE("entropy picks the bin count with the smallest KL divergence, worked by hand",
          "[quant][calibrators]") {
  // bins 1 wide, 2 quantized levels; candidates keep 2, 3 or 4 bins.
  // keep 2: P = [1, 3 + 1] / 5, Q = [1, 3] / 4: KL = .2 ln(.8) + .8 ln(16/15) = 0.00700
  // keep 3: P = [1, 3, 0 + 1], Q's second group is the empty bin 2 -> Q = 0 where P = .2: huge
  // keep 4: P = [1, 3, 0, 1] / 5, Q = [2, 2, 0, 1] / 5: KL = .2 ln(.5) + .6 ln(1.5) = 0.10464
  const histogram h = {1, 3, 0, 1};
  CHECK(entropy_best_bin_count(h, 2) == 2);
  // The threshold counts bin 0 as bin 1: [3, 3, 0, 1], where keeping all 4 bins gives
  // Q = [3, 3, 0, 1] = P (KL 0), so the threshold is TensorRT's (4 + 0.5) * width.
  CHECK(entropy_threshold(h, 1.0, 2) == 4.5);
  CHECK(entropy_best_bin_count(histogram{3, 3, 0, 1}, 2) == 4);
  CHECK(entropy_threshold(histogram(4, 0), 1.0, 2) == 0.0);
}

TEST_CASE("entropy search agrees with a step-by-step reference on random histograms", "[quant][calibrators]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    histogram h(64);
    std::exponential_distribution<double> decay(0.05 + 0.02 * trial);
    for (int n = 0; n < 2000; ++n) {
      const auto bin = static_cast<std::size_t>(decay(rng));
      if (bin < h.size()) ++h[bin];
    }
    h[63] += trial % 3;  // a few outliers at the top
    CAPTURE(trial);
    CHECK(entropy_best_bin_count(h, 8) == reference_entropy_best(h, 8));
  }
}

TEST_CASE("entropy clips a far outlier where ONNX Runtime's defaults return the max", "[quant][calibrators]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> values(20000);
  for (float& v : values) v = normal(rng);
  values.push_back(100.0f);
  tensor_statistics s;  // 2048 bins
  s.add_batch(values);

  // ORT (num_bins = num_quantized_bins = 128): one candidate, the whole histogram, whose
  // edges are +-max|x| -> threshold 100.
  REQUIRE(ort_candidate_count(128, 128) == 1);
  const double ort_threshold = s.abs_max();

  calibrator_options c;
  c.method = calibration_method::entropy;
  const tensor_range r = compute_range(s, c);
  CHECK(r.max < 0.1 * ort_threshold);
  CHECK(r.max > 1.0);  // still keeps the bulk (|x| < 2 sigma)
  CHECK(r.min == -r.max);
}

TEST_CASE("mse picks the threshold balancing rounding against clipping, worked by hand", "[quant][calibrators]") {
  // 100 values at 0.5, one at 7.5; 4 levels, so step t/4 and rounding noise t^2/192.
  // t=4: 100*16/192 + 3.5^2 = 20.58; t=5: 13.02 + 2.5^2 = 19.27; t=6: 18.75 + 1.5^2 = 21.0
  histogram h(8, 0);
  h[0] = 100;
  h[7] = 1;
  CHECK(mse_at_threshold(h, 1.0, 4, 5.0) == Approx(100.0 * 25.0 / 192.0 + 6.25));
  CHECK(mse_threshold(h, 1.0, 4) == 5.0);
}

TEST_CASE("mse threshold is the minimum of the error over every bin edge", "[quant][calibrators]") {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 10; ++trial) {
    histogram h(128);
    std::uniform_int_distribution<int> count(0, 50);
    for (std::size_t k = 0; k < h.size(); ++k) h[k] = k < 20 ? count(rng) * 10 : (count(rng) > 45 ? 1 : 0);
    double best_t = 0.0, best = std::numeric_limits<double>::infinity();
    for (std::size_t k = 1; k <= h.size(); ++k) {
      const double e = mse_at_threshold(h, 0.1, 16, 0.1 * k);
      if (e < best) best = e, best_t = 0.1 * k;
    }
    CAPTURE(trial);
    CHECK(mse_threshold(h, 0.1, 16) == Approx(best_t));
  }
}

TEST_CASE("min-max returns the observed or moving-average extremes, and post-ReLU ranges start at 0",
          "[quant][calibrators]") {
  statistics_options o;
  o.averaging_constant = 0.5;
  tensor_statistics s(o);
  s.add_batch(std::vector<float>{0.0f, 1.0f});
  s.add_batch(std::vector<float>{0.0f, 3.0f});
  calibrator_options c;
  CHECK(compute_range(s, c).min == 0.0);
  CHECK(compute_range(s, c).max == 3.0);
  c.moving_average = true;
  CHECK(compute_range(s, c).max == 2.0);
  c.method = calibration_method::entropy;
  CHECK(compute_range(s, c).min == 0.0);  // no negative values: the negative side is pinned
  CHECK(compute_range(tensor_statistics(), c).max == 0.0);
}

TEST_CASE("calibration methods parse from their CLI names and bad options are refused", "[quant][calibrators]") {
  CHECK(parse_calibration_method("minmax") == calibration_method::min_max);
  CHECK(parse_calibration_method("percentile") == calibration_method::percentile);
  CHECK(parse_calibration_method("entropy") == calibration_method::entropy);
  CHECK(parse_calibration_method("mse") == calibration_method::mse);
  CHECK_THROWS_AS(parse_calibration_method("kl"), error);
  tensor_statistics s;
  s.add_batch(std::vector<float>{1.0f});
  calibrator_options c;
  c.percentile = 0.0;
  CHECK_THROWS_AS(compute_range(s, c), error);
}

TEST_CASE("entropy ignores the spike of exact zeros a ReLU leaves in bin 0", "[quant][calibrators]") {
  // A post-ReLU tensor: half its values are exactly 0, the rest spread evenly to bin 255.
  histogram h(512, 0);
  h[0] = 256 * 100;
  for (std::size_t k = 1; k < 256; ++k) h[k] = 100;
  // Without the zero spike the spread is uniform up to bin 256 and nothing beyond it: the
  // best candidate keeps (nearly) all of it, instead of a threshold pulled in by the spike.
  CHECK(entropy_threshold(h, 1.0, 128) >= 250.0);
}
