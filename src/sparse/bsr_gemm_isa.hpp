#pragma once
// What every instruction-set build of the CPU block-sparse GEMM exports, private to
// src/sparse. bsr_gemm.cpp prepares a `bsr_problem`, runs the threads and calls one build's
// `pack` and `compute`; the builds (bsr_gemm_{portable,avx2}.cpp) share one body,
// bsr_gemm_body.hpp, and differ only in their vector operations.

#include <cstdint>

#include "inferopt/sparse/bsr_gemm.hpp"

namespace inferopt::sparse::detail {

// Rows of X per packed panel and per register tile: three 8-float vectors.
inline constexpr std::int64_t panel_rows = 24;
// Outputs per register tile (the tile is tile_outputs x panel_rows).
inline constexpr std::int64_t tile_outputs = 4;

// X (m x k, row stride ldx) packed as panels of X^T: panel p holds rows p*24 .. p*24+23 of X
// as a k_pad x 24 row-major array at xt + p * k_pad * 24, zero beyond m and beyond k.
struct pack_problem {
  const float* x = nullptr;
  std::int64_t ldx = 0;
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t k_pad = 0;  // k rounded up to whole blocks
  float* xt = nullptr;
};

// Y^T = S X^T, where S is op(W)^T cut into output blocks of `width` outputs. Output block b
// covers outputs b*width .. b*width+width-1 and owns the entries ptr[b] .. ptr[b+1]-1; entry e
// is the stored block values + block_of(e) * width * depth, which multiplies rows
// kblock[e]*depth .. +depth-1 of X^T. Inside a block, the weight of output i and reduction
// step s is at i * out_stride + s * k_stride.
struct bsr_problem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k_pad = 0;
  std::int64_t width = 0;
  std::int64_t depth = 0;
  std::int64_t out_stride = 0;
  std::int64_t k_stride = 0;
  const std::int32_t* ptr = nullptr;     // output blocks + 1 entries
  const std::int32_t* kblock = nullptr;  // per entry
  const std::int32_t* block = nullptr;   // per entry; null: block_of(e) = e
  const float* values = nullptr;
  const float* xt = nullptr;             // the packed panels
  const float* bias = nullptr;           // n values or null
  activation act = activation::none;
  float* y = nullptr;
  std::int64_t ldy = 0;
};

// One namespace per build; `available` is false when the file was compiled without its
// instruction-set flags (its functions then forward to the portable build).
namespace isa_portable {
[[nodiscard]] bool available() noexcept;
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;  // panels [p0, p1)
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;  // output blocks [b0, b1)
}  // namespace isa_portable

namespace isa_avx2 {
[[nodiscard]] bool available() noexcept;
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;
}  // namespace isa_avx2

}  // namespace inferopt::sparse::detail
