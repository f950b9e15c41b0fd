#pragma once
// The fitted efficiencies behind predicted_speedup. Included by speedup_model.hpp; include that
// instead.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "inferopt/sparse/speedup_model.hpp"

namespace inferopt::sparse::detail {

struct speedup_point {
  double sparsity;
  double efficiency;  // measured speedup * (1 - sparsity)
};

// Means over single-thread runs in docs/BENCHMARKS.md. against_avx2: the kernel's AVX2 build
// against Eigen AVX2 (the run before the AVX-512 build, what a CPU without AVX-512 runs).
// against_avx512: the kernel's AVX-512 build against Eigen AVX-512 (speedup_vs_dense_avx512
// of the current run). Refit them when those runs are repeated.
inline constexpr std::array<speedup_point, 3> against_avx2{{{0.50, 0.813}, {0.75, 0.757}, {0.90, 0.594}}};
inline constexpr std::array<speedup_point, 3> against_avx512{{{0.50, 0.827}, {0.75, 0.693}, {0.90, 0.508}}};

inline double efficiency(const std::array<speedup_point, 3>& table, double s) noexcept {
  if (s <= table.front().sparsity) return table.front().efficiency;
  for (std::size_t i = 1; i < table.size(); ++i) {
    if (s <= table[i].sparsity) {
      const speedup_point& a = table[i - 1];
      const speedup_point& b = table[i];
      return a.efficiency + (b.efficiency - a.efficiency) * (s - a.sparsity) / (b.sparsity - a.sparsity);
    }
  }
  return table.back().efficiency;
}

}  // namespace inferopt::sparse::detail

namespace inferopt::sparse {

inline dense_baseline dense_baseline_from(std::string_view isa) noexcept {
  return isa == "avx512" ? dense_baseline::avx512 : dense_baseline::avx2;
}

inline double predicted_speedup(double block_sparsity, dense_baseline baseline) noexcept {
  const double s = std::isnan(block_sparsity) ? 0.0 : std::clamp(block_sparsity, 0.0, 1.0);
  if (s >= 1.0) return std::numeric_limits<double>::infinity();
  return detail::efficiency(baseline == dense_baseline::avx512 ? detail::against_avx512 : detail::against_avx2, s) /
         (1.0 - s);
}

}  // namespace inferopt::sparse
