#pragma once
// The AVX-512 (F, DQ, BW, VL) build of the CPU block-sparse GEMM: the body of the AVX2 build on
// 16-float zmm vectors, with the register tile sized for 32 zmm registers. Every function of
// the build is compiled for AVX-512 + AVX2 + FMA through a target region (function target
// attributes), whatever flags the including file has, and runs only when the CPU probe says so
// (bsr_gemm_config.hpp). Without GCC or Clang on x86-64 the build does not exist.

#include <cstdint>

#include "inferopt/sparse/detail/bsr_gemm_isa.hpp"

namespace inferopt::sparse::detail::bsr_avx512 {

// Four 16-float vectors x 4 outputs: 16 accumulators, 4 X^T vectors, and weights broadcast
// from memory inside the FMAs. Measured on one core against 48 x 4, 48 x 8, 32 x 8, 32 x 12
// and 16 x 16 (up to 24 accumulators): the wider output tiles won by up to 10% with 16x16 and
// 32x32 blocks and lost up to 35% with 4x4 ones; this one was within 10% of the best for every
// block size and shape. 64 also divides the row counts we care about (128 tokens, 1024).
inline constexpr std::int64_t panel_rows = 64;
inline constexpr int tile_outputs = 4;

}  // namespace inferopt::sparse::detail::bsr_avx512

#if INFEROPT_SPARSE_X86_BUILDS
#include "inferopt/sparse/detail/x86_intrinsics.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#endif

#define INFEROPT_SPARSE_ISA bsr_avx512
#include "inferopt/sparse/detail/bsr_gemm_avx2_ops.hpp"

namespace inferopt::sparse::detail::bsr_avx512 {

struct ops {
  using vec = __m512;
  static constexpr int lanes = 16;
  static vec zero() noexcept { return _mm512_setzero_ps(); }
  static vec load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  // GCC folds this into the FMA as an embedded broadcast ({1to16}): no register, no shuffle.
  static vec broadcast(const float* p) noexcept { return _mm512_set1_ps(*p); }
  static vec fma(vec a, vec b, vec acc) noexcept { return _mm512_fmadd_ps(a, b, acc); }
  // maxps returns its second operand when either is NaN: zero first keeps NaN.
  static vec relu(vec a) noexcept { return _mm512_max_ps(_mm512_setzero_ps(), a); }
  static void store(float* p, vec a) noexcept { _mm512_storeu_ps(p, a); }

  // Rows 0 .. 15 of outputs a, b, c, d: transposed 4x4 in each 128-bit lane (as in avx2_ops),
  // then lane l of u_q is row 4 l + q.
  static void store_columns4(vec a, vec b, vec c, vec d, float* y, std::int64_t ldy) noexcept {
    const __m512 t0 = _mm512_unpacklo_ps(a, b);
    const __m512 t1 = _mm512_unpackhi_ps(a, b);
    const __m512 t2 = _mm512_unpacklo_ps(c, d);
    const __m512 t3 = _mm512_unpackhi_ps(c, d);
    const __m512 u[4] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                         _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE)};
    for (int q = 0; q < 4; ++q) {
      _mm_storeu_ps(y + q * ldy, _mm512_castps512_ps128(u[q]));
      _mm_storeu_ps(y + (4 + q) * ldy, _mm512_extractf32x4_ps(u[q], 1));
      _mm_storeu_ps(y + (8 + q) * ldy, _mm512_extractf32x4_ps(u[q], 2));
      _mm_storeu_ps(y + (12 + q) * ldy, _mm512_extractf32x4_ps(u[q], 3));
    }
  }

  static void transpose_8x8(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) noexcept {
    avx2_ops::transpose_8x8(src, lds, dst, ldd);
  }
};


}  // namespace inferopt::sparse::detail::bsr_avx512

#include "inferopt/sparse/detail/bsr_gemm_body.hpp"
#undef INFEROPT_SPARSE_ISA

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // INFEROPT_SPARSE_X86_BUILDS
