// Chooses the nn GEMM build once per process from the core CPU probe. The environment
// variable INFEROPT_NN_ISA=generic|avx2 caps the choice, so that tests can run every build on
// one machine.
#include "nn_gemm.hpp"

#include "isa_choice.hpp"

namespace inferopt::runtime::nn {

const gemm_config& chosen_config() noexcept {
  static const gemm_config& config = choose_isa_build(isa_generic::config(), isa_avx2::config(), isa_avx512::config());
  return config;
}

void gemm(const gemm_args<float>& args, int threads) noexcept {
  if (!onednn_gemm(args, threads)) chosen_config().gemm_f32(args, threads);
}
void gemm(const gemm_args<double>& args, int threads) noexcept { chosen_config().gemm_f64(args, threads); }

std::size_t packed_size(std::int64_t m, std::int64_t k) noexcept { return chosen_config().packed_size(m, k); }

void pack_weights(const float* w, std::int64_t m, std::int64_t k, float* out, int threads) noexcept {
  chosen_config().pack_weights(w, m, k, out, threads);
}

void gemm_packed(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                 std::int64_t ldb, panel_source source, const void* context, const float* bias, const epilogue<float>* ep, float* c,
                 std::int64_t ldc, int threads) noexcept {
  chosen_config().gemm_packed(packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, threads);
}

const char* gemm_isa() noexcept { return chosen_config().isa; }

const char* gemm_backend() noexcept {
  const char* onednn = onednn_gemm_backend();
  return onednn ? onednn : "eigen";
}

}  // namespace inferopt::runtime::nn

namespace inferopt::runtime {

const char* dense_gemm_isa() noexcept { return nn::gemm_isa(); }

}  // namespace inferopt::runtime
