// The AVX2 + FMA vector operations of the CPU block-sparse GEMM (see bsr_gemm_body.hpp), for
// the AVX2 build and for the AVX-512 build, which packs X with the same 8x8 transpose. Included
// once per build, on purpose without #pragma once: include it only after <immintrin.h> and
// INFEROPT_SPARSE_ISA, inside a target region of at least avx2 and fma. It defines `avx2_ops`
// in that build's namespace.

namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA {

struct avx2_ops {
  using vec = __m256;
  static constexpr int lanes = 8;
  static vec zero() noexcept { return _mm256_setzero_ps(); }
  static vec load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static vec broadcast(const float* p) noexcept { return _mm256_broadcast_ss(p); }
  static vec fma(vec a, vec b, vec acc) noexcept { return _mm256_fmadd_ps(a, b, acc); }
  // maxps returns its second operand when either is NaN: zero first keeps NaN.
  static vec relu(vec a) noexcept { return _mm256_max_ps(_mm256_setzero_ps(), a); }
  static void store(float* p, vec a) noexcept { _mm256_storeu_ps(p, a); }

  // Rows 0 .. 7 of outputs a, b, c, d: transposed 4x4 in each 128-bit lane, so that row r of
  // Y gets 4 contiguous floats.
  static void store_columns4(vec a, vec b, vec c, vec d, float* y, std::int64_t ldy) noexcept {
    const __m256 t0 = _mm256_unpacklo_ps(a, b);  // a0 b0 a1 b1 | a4 b4 a5 b5
    const __m256 t1 = _mm256_unpackhi_ps(a, b);  // a2 b2 a3 b3 | a6 b6 a7 b7
    const __m256 t2 = _mm256_unpacklo_ps(c, d);
    const __m256 t3 = _mm256_unpackhi_ps(c, d);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);  // rows 0 | 4
    const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xEE);  // rows 1 | 5
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);  // rows 2 | 6
    const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xEE);  // rows 3 | 7
    _mm_storeu_ps(y, _mm256_castps256_ps128(u0));
    _mm_storeu_ps(y + ldy, _mm256_castps256_ps128(u1));
    _mm_storeu_ps(y + 2 * ldy, _mm256_castps256_ps128(u2));
    _mm_storeu_ps(y + 3 * ldy, _mm256_castps256_ps128(u3));
    _mm_storeu_ps(y + 4 * ldy, _mm256_extractf128_ps(u0, 1));
    _mm_storeu_ps(y + 5 * ldy, _mm256_extractf128_ps(u1, 1));
    _mm_storeu_ps(y + 6 * ldy, _mm256_extractf128_ps(u2, 1));
    _mm_storeu_ps(y + 7 * ldy, _mm256_extractf128_ps(u3, 1));
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

}  // namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA
