// The AVX2+FMA build of the nn GEMM. CMake compiles this file with -mavx2 -mfma on x86-64
// (see the runtime target); without those flags it only reports itself unavailable.
#include "nn_gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#define Eigen inferopt_eigen_avx2
#define INFEROPT_NN_GEMM_ISA isa_avx2
#include "nn_gemm_body.hpp"
#else
namespace inferopt::runtime::nn::isa_avx2 {
bool available() noexcept { return false; }
void gemm(const gemm_args<float>& args, int threads) noexcept { isa_generic::gemm(args, threads); }
void gemm(const gemm_args<double>& args, int threads) noexcept { isa_generic::gemm(args, threads); }
std::size_t packed_size(std::int64_t m, std::int64_t k) noexcept { return isa_generic::packed_size(m, k); }
void pack_weights(const float* w, std::int64_t m, std::int64_t k, float* out, int threads) noexcept {
  isa_generic::pack_weights(w, m, k, out, threads);
}
void gemm_packed(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                 std::int64_t ldb, panel_source source, const void* context, const float* bias, const epilogue<float>* ep, float* c,
                 std::int64_t ldc, int threads) noexcept {
  isa_generic::gemm_packed(packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, threads);
}
}  // namespace inferopt::runtime::nn::isa_avx2
#endif
