// Eigen's dense GEMM compiled for AVX-512, a stronger baseline than the AVX2 one on CPUs that
// have it. Eigen is renamed (as in src/runtime/kernels/nn_gemm_avx512.cpp) so that none of
// its AVX-512 instantiations can be merged into the AVX2 baseline of bsr_bench.cpp. Nothing
// here is inline outside that namespace (the CPU probe included): the linker could otherwise
// hand this file's AVX-512 copy of it to callers on CPUs without AVX-512.
#include "dense_baseline.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define Eigen bench_eigen_avx512
#include <Eigen/Core>

namespace bench {

bool dense_avx512_built() { return true; }

void dense_avx512(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k, std::int64_t n,
                  bool trans_w, int threads) {
  using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::setNbThreads(threads);
  const Eigen::Map<const row_major> xm(x, m, k);
  Eigen::Map<row_major> ym(y, m, n);
  if (trans_w) ym.noalias() = xm * Eigen::Map<const row_major>(w, n, k).transpose();
  else ym.noalias() = xm * Eigen::Map<const row_major>(w, k, n);
}

}  // namespace bench

#else

namespace bench {
bool dense_avx512_built() { return false; }
void dense_avx512(const float*, const float*, float*, std::int64_t, std::int64_t, std::int64_t, bool, int) {}
}  // namespace bench

#endif
