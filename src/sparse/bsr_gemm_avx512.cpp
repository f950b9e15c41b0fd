// The AVX-512 (F, DQ, BW, VL) build of the CPU block-sparse GEMM: the body of the AVX2 build
// on 16-float vectors, with the register tile in bsr_gemm_isa.hpp sized for 32 zmm registers.
// CMake compiles this file with those flags and -mavx2 -mfma on x86-64 with GCC or Clang (see
// the sparse target); without them it only reports itself unavailable (bsr_gemm.cpp then never
// runs it).
#include "bsr_gemm_isa.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__FMA__)
#include <immintrin.h>

#define INFEROPT_SPARSE_ISA isa_avx512
#include "bsr_gemm_avx2_ops.hpp"

namespace inferopt::sparse::detail::isa_avx512 {
namespace {

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

}  // namespace

bool available() noexcept { return true; }

}  // namespace inferopt::sparse::detail::isa_avx512

#include "bsr_gemm_body.hpp"

#else

#include <cstdlib>

namespace inferopt::sparse::detail::isa_avx512 {
bool available() noexcept { return false; }
void pack(const pack_problem&, std::int64_t, std::int64_t) noexcept { std::abort(); }
void compute(const bsr_problem&, std::int64_t, std::int64_t) noexcept { std::abort(); }
}  // namespace inferopt::sparse::detail::isa_avx512

#endif
