// Least-squares refit after a cut: checked against outputs computed here row by row, not
// through the moments the library solves with.

#include "inferopt/prune/least_squares_refit.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "inferopt/core/error.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

struct layer {
  std::int64_t features, outputs;
  std::vector<float> weight, bias;
};

layer random_layer(std::int64_t features, std::int64_t outputs, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  layer l{features, outputs, {}, {}};
  for (std::int64_t i = 0; i < features * outputs; ++i) l.weight.push_back(n(rng));
  for (std::int64_t j = 0; j < outputs; ++j) l.bias.push_back(n(rng));
  return l;
}

/// || X_kept W' + b' - (X W + b) ||^2 / || X W + b ||^2, row by row in double.
double measured_error(const std::vector<float>& x, const layer& l, const std::vector<std::int64_t>& kept, const std::vector<float>& w2,
                      const std::vector<float>& b2) {
  double diff = 0.0, norm = 0.0;
  const auto rows = static_cast<std::int64_t>(x.size()) / l.features;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < l.outputs; ++j) {
      double y = l.bias[static_cast<std::size_t>(j)], y2 = b2[static_cast<std::size_t>(j)];
      for (std::int64_t i = 0; i < l.features; ++i) y += double(x[r * l.features + i]) * l.weight[i * l.outputs + j];
      for (std::size_t a = 0; a < kept.size(); ++a) y2 += double(x[r * l.features + kept[a]]) * w2[a * l.outputs + j];
      diff += (y2 - y) * (y2 - y);
      norm += y * y;
    }
  }
  return diff / norm;
}

std::vector<float> kept_rows(const layer& l, const std::vector<std::int64_t>& kept) {
  std::vector<float> w;
  for (std::int64_t i : kept) w.insert(w.end(), l.weight.begin() + i * l.outputs, l.weight.begin() + (i + 1) * l.outputs);
  return w;
}

/// `count` rows, each what `row` makes of a seeded N(0, 1) source.
template <typename Row>
std::vector<float> activations(int count, std::uint32_t seed, Row row) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  auto draw = [&] { return n(rng); };
  std::vector<float> x;
  for (int r = 0; r < count; ++r) {
    const std::vector<float> values = row(draw);
    x.insert(x.end(), values.begin(), values.end());
  }
  return x;
}

}  // namespace

TEST_CASE("refit recovers an input that is a combination of kept ones, and the reported errors are the measured ones", "[prune][refit]") {
  const layer l = random_layer(4, 3, 1);
  const std::vector<float> x = activations(200, 2, [](auto draw) {
    const float a = draw(), b = draw(), c = draw();
    return std::vector<float>{a, b, 0.5f * a - 2.0f * b, c};  // input 2 is redundant
  });
  prune::input_gram g(4);
  g.add(x);
  const std::vector<std::int64_t> kept{0, 1, 3};
  const prune::refit_result r = prune::refit_after_cut(g, l.weight, l.bias, 3, kept, {.relative_ridge = 1e-9});
  CHECK(r.relative_error_cut > 0.05);
  CHECK(r.relative_error_refit < 1e-6);
  CHECK(measured_error(x, l, kept, r.weight, r.bias) == Approx(r.relative_error_refit).margin(1e-6));
  CHECK(measured_error(x, l, kept, kept_rows(l, kept), l.bias) == Approx(r.relative_error_cut).epsilon(1e-4));
}

TEST_CASE("refit moves a removed input's mean into the bias", "[prune][refit]") {
  const layer l = random_layer(3, 2, 3);
  const std::vector<float> x = activations(300, 4, [](auto draw) {
    const float a = draw(), b = draw();
    return std::vector<float>{a, b, 5.0f};  // input 2 is a constant 5
  });
  prune::input_gram g(3);
  g.add(x);
  const std::vector<std::int64_t> kept{0, 1};
  const prune::refit_result r = prune::refit_after_cut(g, l.weight, l.bias, 2, kept);
  for (std::size_t j = 0; j < 2; ++j) CHECK(r.bias[j] == Approx(l.bias[j] + 5.0f * l.weight[2 * 2 + j]).epsilon(1e-3));
  CHECK(r.relative_error_refit < 1e-6);
}

TEST_CASE("refit never does worse than the plain cut, and moments gathered in batches equal one pass", "[prune][refit]") {
  const layer l = random_layer(16, 8, 5);
  const std::vector<float> x = activations(64, 6, [](auto draw) {
    const float shared = draw();
    std::vector<float> row;
    for (int i = 0; i < 16; ++i) row.push_back(0.7f * shared + draw() + 0.1f * static_cast<float>(i));
    return row;
  });
  prune::input_gram whole(16), halves(16);
  whole.add(x);
  halves.add(std::span<const float>(x).first(x.size() / 2));
  halves.add(std::span<const float>(x).last(x.size() / 2));
  CHECK(halves.rows() == 64);
  for (std::int64_t i = 0; i <= 16; ++i) {
    for (std::int64_t j = 0; j <= 16; ++j) CHECK(halves.at(i, j) == Approx(whole.at(i, j)).epsilon(1e-12));
  }
  const std::vector<std::int64_t> kept{0, 2, 3, 5, 8, 9, 11, 15};
  const prune::refit_result r = prune::refit_after_cut(whole, l.weight, l.bias, 8, kept);
  CHECK(r.relative_error_refit < r.relative_error_cut);
  CHECK(measured_error(x, l, kept, r.weight, r.bias) == Approx(r.relative_error_refit).epsilon(1e-3));
}

TEST_CASE("refit refuses sizes that do not match, bad kept rows, no rows and non-finite activations", "[prune][refit]") {
  const layer l = random_layer(3, 2, 7);
  prune::input_gram g(3);
  const std::vector<std::int64_t> kept{0, 2};
  REQUIRE_THROWS_WITH(prune::refit_after_cut(g, l.weight, l.bias, 2, kept), Contains("no calibration rows"));
  g.add(std::vector<float>{1, 2, 3, 4, 5, 7});
  REQUIRE_THROWS_WITH(prune::refit_after_cut(g, l.weight, l.bias, 3, kept), Contains("weight must be [3, outputs]"));
  REQUIRE_THROWS_WITH(prune::refit_after_cut(g, l.weight, l.bias, 2, std::vector<std::int64_t>{2, 0}), Contains("ascending"));
  REQUIRE_THROWS_WITH(prune::refit_after_cut(g, l.weight, l.bias, 2, std::vector<std::int64_t>{0, 3}), Contains("below 3"));
  REQUIRE_THROWS_WITH(g.add(std::vector<float>{1, 2}), Contains("not rows of 3"));
  REQUIRE_THROWS_WITH(g.add(std::vector<float>{1, NAN, 3}), Contains("NaN or infinity"));
  REQUIRE_THROWS_AS(prune::input_gram(0), error);
}
