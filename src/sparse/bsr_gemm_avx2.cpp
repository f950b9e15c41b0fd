// The AVX2 + FMA build of the CPU block-sparse GEMM. CMake compiles this file with -mavx2
// -mfma on x86-64 with GCC or Clang (see the sparse target); without those flags it only
// reports itself unavailable and forwards to the portable build.
#include "bsr_gemm_isa.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define INFEROPT_SPARSE_ISA isa_avx2

namespace inferopt::sparse::detail::isa_avx2 {
namespace {

struct ops {
  using vec = __m256;
  static vec zero() noexcept { return _mm256_setzero_ps(); }
  static vec load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static vec broadcast(const float* p) noexcept { return _mm256_broadcast_ss(p); }
  static vec fma(vec a, vec b, vec acc) noexcept { return _mm256_fmadd_ps(a, b, acc); }
  // maxps returns its second operand when either is NaN: zero first keeps NaN.
  static vec relu(vec a) noexcept { return _mm256_max_ps(_mm256_setzero_ps(), a); }
  static void store(float* p, vec a) noexcept { _mm256_storeu_ps(p, a); }

  // Four outputs x 24 rows, transposed 4x8 at a time: row r of Y gets 4 contiguous floats.
  static void store_tile(const vec (&acc)[4][3], float* y, std::int64_t ldy) noexcept {
    for (int j = 0; j < 3; ++j) {
      const __m256 t0 = _mm256_unpacklo_ps(acc[0][j], acc[1][j]);  // a0 b0 a1 b1 | a4 b4 a5 b5
      const __m256 t1 = _mm256_unpackhi_ps(acc[0][j], acc[1][j]);  // a2 b2 a3 b3 | a6 b6 a7 b7
      const __m256 t2 = _mm256_unpacklo_ps(acc[2][j], acc[3][j]);
      const __m256 t3 = _mm256_unpackhi_ps(acc[2][j], acc[3][j]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);  // rows 0 | 4
      const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xEE);  // rows 1 | 5
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);  // rows 2 | 6
      const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xEE);  // rows 3 | 7
      float* base = y + 8 * j * ldy;
      _mm_storeu_ps(base, _mm256_castps256_ps128(u0));
      _mm_storeu_ps(base + ldy, _mm256_castps256_ps128(u1));
      _mm_storeu_ps(base + 2 * ldy, _mm256_castps256_ps128(u2));
      _mm_storeu_ps(base + 3 * ldy, _mm256_castps256_ps128(u3));
      _mm_storeu_ps(base + 4 * ldy, _mm256_extractf128_ps(u0, 1));
      _mm_storeu_ps(base + 5 * ldy, _mm256_extractf128_ps(u1, 1));
      _mm_storeu_ps(base + 6 * ldy, _mm256_extractf128_ps(u2, 1));
      _mm_storeu_ps(base + 7 * ldy, _mm256_extractf128_ps(u3, 1));
    }
  }

  static void transpose_8x8(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) noexcept {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
    const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
    const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
    const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
    const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44);
    const __m256 s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44);
    const __m256 s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44);
    const __m256 s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44);
    const __m256 s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
  }
};

}  // namespace

bool available() noexcept { return true; }

}  // namespace inferopt::sparse::detail::isa_avx2

#include "bsr_gemm_body.hpp"

#else

namespace inferopt::sparse::detail::isa_avx2 {
bool available() noexcept { return false; }
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept { isa_portable::pack(p, p0, p1); }
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept { isa_portable::compute(p, b0, b1); }
}  // namespace inferopt::sparse::detail::isa_avx2

#endif
