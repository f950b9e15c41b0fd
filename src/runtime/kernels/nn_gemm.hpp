#pragma once
// The one GEMM entry point of the nn kernels (Conv, ConvTranspose, MatMul, Gemm), private to
// src/runtime/kernels.
//
// Layout: row-major operands with leading dimensions; op(X) is X or its transpose.
// Computes C = alpha * op(A) * op(B) + beta * C; with beta == 0, C is only written (NaN or
// garbage in C does not leak into the result).
//
// The products are Eigen 3.4's (blocked, packed, OpenMP-parallel when `threads` > 1 and the
// call is not already inside a parallel region). Eigen picks its register kernels at compile
// time, from the compiler's predefined macros (__AVX2__, __AVX512F__, ...), so the same body is
// compiled three times (nn_gemm_{generic,avx2,avx512}.cpp, each with its instruction-set flags
// and its own copy of Eigen in a renamed namespace so that the three never share an inline
// function) and `gemm` runs the widest one the CPU has (`chosen_config`, below). Function
// target attributes, which the header-only BSR kernels use, would not do here: they define none
// of those macros, so Eigen would compile its SSE2 kernels under them.
// Error bound: a float32 dot product of length k in blocked order, |err| <= k * eps * sum|a*b|.

#include <cstddef>
#include <cstdint>

#include "nn_epilogue.hpp"

namespace inferopt::runtime::nn {

template <class T>
struct gemm_args {
  std::int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;  // m x k (k x m when trans_a)
  std::int64_t lda = 0;
  bool trans_a = false;
  const T* b = nullptr;  // k x n (n x k when trans_b)
  std::int64_t ldb = 0;
  bool trans_b = false;
  T* c = nullptr;  // m x n
  std::int64_t ldc = 0;
  T alpha = 1;
  T beta = 0;
};

void gemm(const gemm_args<float>& args, int threads) noexcept;
void gemm(const gemm_args<double>& args, int threads) noexcept;

/// The instruction set `gemm` runs with on this CPU: "avx512", "avx2" or "generic".
[[nodiscard]] const char* gemm_isa() noexcept;
/// Who computes float32 `gemm`: "onednn" or "eigen".
[[nodiscard]] const char* gemm_backend() noexcept;

/// The float32 product on oneDNN (nn_gemm_onednn.cpp); false when the build has no oneDNN,
/// INFEROPT_NN_GEMM=eigen or INFEROPT_NN_ISA=generic turned it off, or oneDNN refused the
/// arguments: then the Eigen build computes it.
bool onednn_gemm(const gemm_args<float>& args, int threads) noexcept;
/// C[m, n] = sum_k (A[m, k] - a_zero) * (B[k, n] - b_zero), row-major and dense, int32 out,
/// on oneDNN's integer GEMM (A uint8 or int8, B int8). False, with C untouched, when the build
/// has no oneDNN, it is turned off, or the CPU lacks VNNI: without it oneDNN may saturate
/// 16-bit intermediate sums, and the caller's exact loop must serve.
bool onednn_integer_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a, std::uint8_t a_zero,
                         const std::int8_t* b, std::int8_t b_zero, std::int32_t* c, int threads) noexcept;
bool onednn_integer_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::int8_t* a, std::int8_t a_zero,
                         const std::int8_t* b, std::int8_t b_zero, std::int32_t* c, int threads) noexcept;
/// "onednn" when onednn_gemm serves products in this process, else null.
[[nodiscard]] const char* onednn_gemm_backend() noexcept;

// ---- products with a constant left operand (convolution weights), float32 only ----------
//
// C[m x n] = bias + W[m x k] * B[k x n] (row-major), with W packed once into the panels of Eigen's
// GEBP kernel (gebp_kernel, gemm_pack_rhs: the blocks Eigen's own product would pack on
// every call) and B either read in place or produced one cache block at a time by a
// callback (im2col), so that it never makes a round trip through memory. Threads take
// disjoint blocks of C: column blocks when n is large, row blocks otherwise; no barriers.
// Each thread writes the bias (or zeros), plus the epilogue's residual, into its tile of C
// right before the tile's first product, and applies the epilogue's activation right after
// the tile's last one, while the tile is in cache (no extra pass over C). The packed layout belongs to the instruction set chosen
// at startup, so pack and multiply in the same process.
// Error bound: that of `gemm` with the same k.

/// Writes rows [k0, k1) and columns [p0, p1) of B into dst (row-major, leading dim ld).
using panel_source = void (*)(const void* context, std::int64_t k0, std::int64_t k1, std::int64_t p0,
                              std::int64_t p1, float* dst, std::int64_t ld);

/// Floats needed to pack an m x k left operand.
[[nodiscard]] std::size_t packed_size(std::int64_t m, std::int64_t k) noexcept;
/// Packs W (row-major, leading dim k) into `out`, which must be 64-byte aligned and hold
/// packed_size(m, k) floats; blocks are packed in parallel on up to `threads` threads.
void pack_weights(const float* w, std::int64_t m, std::int64_t k, float* out, int threads = 1) noexcept;
/// C = act(bias[row] (0 when bias is null) + residual + packed W * B), where B is `b`
/// (leading dim ldb) or, when b is null, what `source` writes for `context`; `ep` (null: no
/// residual, identity) gives the residual (C's layout, leading dim ep->ldr) and activation.
void gemm_packed(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                 std::int64_t ldb, panel_source source, const void* context, const float* bias, const epilogue<float>* ep, float* c,
                 std::int64_t ldc, int threads) noexcept;

// ---- the builds -----------------------------------------------------------------------
//
// One instruction-set build of nn_gemm_body.hpp: its name and entry points, the signatures of
// the functions above. Filled once per build, as a constant; nn_gemm.cpp picks one of them
// once per process from the CPU probe (inferopt/core/cpu_features.hpp).
struct gemm_config {
  const char* isa;  // "avx512", "avx2" or "generic": what gemm_isa() reports
  void (*gemm_f32)(const gemm_args<float>& args, int threads) noexcept;
  void (*gemm_f64)(const gemm_args<double>& args, int threads) noexcept;
  std::size_t (*packed_size)(std::int64_t m, std::int64_t k) noexcept;
  void (*pack_weights)(const float* w, std::int64_t m, std::int64_t k, float* out, int threads) noexcept;
  void (*gemm_packed)(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                      std::int64_t ldb, panel_source source, const void* context, const float* bias,
                      const epilogue<float>* ep, float* c, std::int64_t ldc, int threads) noexcept;
};

// Each build's config; null when its file was compiled without its instruction-set flags
// (non-x86 targets, other compilers). The generic build is always there: it is the fallback.
namespace isa_generic {
[[nodiscard]] const gemm_config* config() noexcept;
}
namespace isa_avx2 {
[[nodiscard]] const gemm_config* config() noexcept;
}
namespace isa_avx512 {
[[nodiscard]] const gemm_config* config() noexcept;
}

/// The build this process runs, chosen on the first call (INFEROPT_NN_ISA caps it).
[[nodiscard]] const gemm_config& chosen_config() noexcept;

}  // namespace inferopt::runtime::nn
