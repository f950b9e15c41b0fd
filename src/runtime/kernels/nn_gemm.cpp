// Chooses the nn GEMM build once per process from the core CPU probe. The environment
// variable INFEROPT_NN_ISA=generic|avx2 caps the choice, so that tests can run every build on
// one machine.
#include "nn_gemm.hpp"

#include <cstdlib>
#include <cstring>

#include "inferopt/core/cpu_features.hpp"

namespace inferopt::runtime::nn {

namespace {

// The widest build that is compiled in, allowed by INFEROPT_NN_ISA and run by this CPU; the
// generic build when there is none (the one fallback).
const gemm_config& choose() noexcept {
  const char* cap = std::getenv("INFEROPT_NN_ISA");
  const bool allow_avx512 = !cap || std::strcmp(cap, "avx512") == 0;
  const bool allow_avx2 = allow_avx512 || std::strcmp(cap, "avx2") == 0;
  const cpu_features& cpu = cpu_features_of_this_machine();
  if (const gemm_config* c = isa_avx512::config(); c != nullptr && allow_avx512 && cpu.has_avx512_skx()) return *c;
  if (const gemm_config* c = isa_avx2::config(); c != nullptr && allow_avx2 && cpu.has_avx2_fma()) return *c;
  return *isa_generic::config();
}

}  // namespace

const gemm_config& chosen_config() noexcept {
  static const gemm_config& config = choose();
  return config;
}

void gemm(const gemm_args<float>& args, int threads) noexcept { chosen_config().gemm_f32(args, threads); }
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

}  // namespace inferopt::runtime::nn

namespace inferopt::runtime {

const char* dense_gemm_isa() noexcept { return nn::gemm_isa(); }

}  // namespace inferopt::runtime
