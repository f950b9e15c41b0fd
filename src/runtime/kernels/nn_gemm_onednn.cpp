// The float32 product of nn::gemm on oneDNN's JIT sgemm, when the build has oneDNN
// (INFEROPT_WITH_ONEDNN). Chosen by measurement: on BERT's projections (128 x 768 x 768 ..
// 128 x 3072 x 768), attention's per-head products and convolution-sized products it is
// 1.2-1.4x Eigen's GEBP at one thread and 1.3-2.2x at two (docs/BENCHMARKS.md, "GEMM backend").
// oneDNN runs its own instruction-set dispatch (AVX-512, AVX2, SSE4.1); INFEROPT_NN_ISA caps it
// like the Eigen builds, and INFEROPT_NN_GEMM=eigen turns it off, so that tests can run every
// variant on one machine.
// Threads: the OpenMP runtime oneDNN was built with is the one Eigen and our kernels use
// (omp_team.hpp).
#include "nn_gemm.hpp"

#include <cstdlib>
#include <cstring>

#ifdef INFEROPT_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include "omp_team.hpp"
#endif

namespace inferopt::runtime::nn {

#ifdef INFEROPT_WITH_ONEDNN
namespace {

// Whether oneDNN serves float products in this process, decided on the first call.
bool onednn_enabled() noexcept {
  static const bool enabled = [] {
    const char* backend = std::getenv("INFEROPT_NN_GEMM");
    if (backend && std::strcmp(backend, "eigen") == 0) return false;
    const char* cap = std::getenv("INFEROPT_NN_ISA");
    if (cap && std::strcmp(cap, "generic") == 0) return false;  // the portable build: Eigen's
    if (cap && std::strcmp(cap, "avx2") == 0) dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
    return true;
  }();
  return enabled;
}

}  // namespace

bool onednn_gemm(const gemm_args<float>& g, int threads) noexcept {
  if (!onednn_enabled()) return false;
  // beta == 0 must not read C (NaN there must not leak), which oneDNN's sgemm honours; alpha
  // and beta pass through.
  const omp_team_for_call team(worthwhile_threads(g.m * g.n * g.k, threads));
  return dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta,
                    g.c, g.ldc) == dnnl_success;
}

namespace {

// VNNI multiplies u8 by s8 into 32-bit sums; the older vpmaddubsw path sums pairs in 16 bits
// with saturation, which an exact MatMulInteger must not do.
bool integer_gemm_exact() noexcept {
  static const bool exact = [] {
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_vnni || isa == dnnl_cpu_isa_avx512_core_bf16 ||
           isa == dnnl_cpu_isa_avx512_core_amx || isa == dnnl_cpu_isa_avx2_vnni;
  }();
  return exact;
}

/// C = (A - a_zero)(B - b_zero) on `gemm` (oneDNN's u8s8s32 or s8s8s32), row-major, dense.
template <class A, class Gemm>
bool integer_product(Gemm gemm, std::int64_t m, std::int64_t n, std::int64_t k, const A* a, A a_zero, const std::int8_t* b,
                     std::int8_t b_zero, std::int32_t* c, int threads) noexcept {
  if (!onednn_enabled() || !integer_gemm_exact()) return false;
  const omp_team_for_call team(threads);
  const std::int32_t no_offset = 0;
  return gemm('N', 'N', 'F', m, n, k, 1.0f, a, k, a_zero, b, n, b_zero, 0.0f, c, n, &no_offset) == dnnl_success;
}

}  // namespace

bool onednn_integer_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a, std::uint8_t a_zero,
                         const std::int8_t* b, std::int8_t b_zero, std::int32_t* c, int threads) noexcept {
  return integer_product(dnnl_gemm_u8s8s32, m, n, k, a, a_zero, b, b_zero, c, threads);
}

bool onednn_integer_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::int8_t* a, std::int8_t a_zero,
                         const std::int8_t* b, std::int8_t b_zero, std::int32_t* c, int threads) noexcept {
  return integer_product(dnnl_gemm_s8s8s32, m, n, k, a, a_zero, b, b_zero, c, threads);
}

const char* onednn_gemm_backend() noexcept { return onednn_enabled() ? "onednn" : nullptr; }
#else
bool onednn_integer_gemm(std::int64_t, std::int64_t, std::int64_t, const std::uint8_t*, std::uint8_t, const std::int8_t*,
                         std::int8_t, std::int32_t*, int) noexcept {
  return false;
}
bool onednn_integer_gemm(std::int64_t, std::int64_t, std::int64_t, const std::int8_t*, std::int8_t, const std::int8_t*,
                         std::int8_t, std::int32_t*, int) noexcept {
  return false;
}
bool onednn_gemm(const gemm_args<float>&, int) noexcept { return false; }
const char* onednn_gemm_backend() noexcept { return nullptr; }
#endif

}  // namespace inferopt::runtime::nn
