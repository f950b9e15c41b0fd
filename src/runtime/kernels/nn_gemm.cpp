// Chooses the nn GEMM build once per process from what the CPU reports. The environment
// variable INFEROPT_NN_ISA=generic|avx2 caps the choice, so that tests can run every build on
// one machine.
#include "nn_gemm.hpp"

#include <cstdlib>
#include <cstring>

namespace inferopt::runtime::nn {

namespace {

enum class isa { generic, avx2, avx512 };

isa detect() noexcept {
  const char* cap = std::getenv("INFEROPT_NN_ISA");
  const bool allow_avx512 = !cap || std::strcmp(cap, "avx512") == 0;
  const bool allow_avx2 = allow_avx512 || std::strcmp(cap, "avx2") == 0;
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (allow_avx512 && isa_avx512::available() && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("fma")) {
    return isa::avx512;
  }
  if (allow_avx2 && isa_avx2::available() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return isa::avx2;
  }
#else
  (void)allow_avx2;
#endif
  return isa::generic;
}

isa chosen() noexcept {
  static const isa which = detect();
  return which;
}

template <class T>
void dispatch(const gemm_args<T>& args, int threads) noexcept {
  switch (chosen()) {
    case isa::avx512: isa_avx512::gemm(args, threads); return;
    case isa::avx2: isa_avx2::gemm(args, threads); return;
    case isa::generic: isa_generic::gemm(args, threads); return;
  }
}

}  // namespace

void gemm(const gemm_args<float>& args, int threads) noexcept { dispatch(args, threads); }
void gemm(const gemm_args<double>& args, int threads) noexcept { dispatch(args, threads); }

std::size_t packed_size(std::int64_t m, std::int64_t k) noexcept {
  switch (chosen()) {
    case isa::avx512: return isa_avx512::packed_size(m, k);
    case isa::avx2: return isa_avx2::packed_size(m, k);
    case isa::generic: break;
  }
  return isa_generic::packed_size(m, k);
}

void pack_weights(const float* w, std::int64_t m, std::int64_t k, float* out, int threads) noexcept {
  switch (chosen()) {
    case isa::avx512: return isa_avx512::pack_weights(w, m, k, out, threads);
    case isa::avx2: return isa_avx2::pack_weights(w, m, k, out, threads);
    case isa::generic: return isa_generic::pack_weights(w, m, k, out, threads);
  }
}

void gemm_packed(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                 std::int64_t ldb, panel_source source, const void* context, const float* bias, const epilogue<float>* ep, float* c,
                 std::int64_t ldc, int threads) noexcept {
  switch (chosen()) {
    case isa::avx512: return isa_avx512::gemm_packed(packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, threads);
    case isa::avx2: return isa_avx2::gemm_packed(packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, threads);
    case isa::generic: return isa_generic::gemm_packed(packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, threads);
  }
}

const char* gemm_isa() noexcept {
  switch (chosen()) {
    case isa::avx512: return "avx512";
    case isa::avx2: return "avx2";
    case isa::generic: return "generic";
  }
  return "generic";
}

}  // namespace inferopt::runtime::nn

namespace inferopt::runtime {

const char* dense_gemm_isa() noexcept { return nn::gemm_isa(); }

}  // namespace inferopt::runtime
