#pragma once
// The portable build of the CPU block-sparse GEMM: plain C++ on 8-float arrays, which the
// compiler vectorizes for whatever the including file is compiled for (SSE2 on x86-64 by
// default). It has no target region: it is what runs everywhere.

#include <cstdint>

#include "inferopt/sparse/detail/bsr_gemm_isa.hpp"

namespace inferopt::sparse::detail::bsr_portable {

// Three 8-float vectors, as in the AVX2 build.
inline constexpr std::int64_t panel_rows = 24;
inline constexpr int tile_outputs = 4;

struct ops {
  static constexpr int lanes = 8;
  struct vec {
    float v[lanes];
  };
  static vec zero() noexcept { return vec{}; }
  static vec load(const float* p) noexcept {
    vec r;
    for (int i = 0; i < 8; ++i) r.v[i] = p[i];
    return r;
  }
  static vec broadcast(const float* p) noexcept {
    vec r;
    for (float& x : r.v) x = *p;
    return r;
  }
  static vec fma(const vec& a, const vec& b, const vec& acc) noexcept {
    vec r;
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] * b.v[i] + acc.v[i];
    return r;
  }
  static vec relu(const vec& a) noexcept {
    vec r;
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] < 0.0F ? 0.0F : a.v[i];  // NaN stays NaN
    return r;
  }
  static void store(float* p, const vec& a) noexcept {
    for (int i = 0; i < 8; ++i) p[i] = a.v[i];
  }
  static void store_columns4(const vec& a, const vec& b, const vec& c, const vec& d, float* y,
                             std::int64_t ldy) noexcept {
    for (int r = 0; r < lanes; ++r) {
      y[r * ldy] = a.v[r];
      y[r * ldy + 1] = b.v[r];
      y[r * ldy + 2] = c.v[r];
      y[r * ldy + 3] = d.v[r];
    }
  }
  static void transpose_8x8(const float* src, std::int64_t lds, float* dst, std::int64_t ldd) noexcept {
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) dst[c * ldd + r] = src[r * lds + c];
    }
  }
};

}  // namespace inferopt::sparse::detail::bsr_portable

#define INFEROPT_SPARSE_ISA bsr_portable
#include "inferopt/sparse/detail/bsr_gemm_body.hpp"
#undef INFEROPT_SPARSE_ISA
