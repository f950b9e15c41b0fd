#pragma once
// Seeded random test data, the same on every run.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace inferopt::test {

/// `n` values uniform in [-scale, scale].
inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

/// A rows x cols matrix (row-major) of standard normal values.
inline std::vector<float> random_dense(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> value(0.0F, 1.0F);
  std::vector<float> dense(static_cast<std::size_t>(rows * cols));
  for (float& v : dense) v = value(rng);
  return dense;
}

}  // namespace inferopt::test
