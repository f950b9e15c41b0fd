#pragma once
// The second dense baseline of bsr_bench: Eigen compiled for AVX-512 (dense_avx512.cpp).

#include <cstdint>

namespace bench {

// Whether dense_avx512.cpp was compiled for AVX-512; whether this CPU runs it is the core
// probe's to say (inferopt/core/cpu_features.hpp), asked from bsr_bench.cpp.
bool dense_avx512_built();
// y = x w^T (w: n x k) when trans_w, else y = x w (w: k x n); row-major, dense.
void dense_avx512(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k, std::int64_t n,
                  bool trans_w, int threads);

}  // namespace bench
