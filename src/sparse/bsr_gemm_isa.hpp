#pragma once
// What every instruction-set build of the CPU block-sparse GEMM exports, private to
// src/sparse. bsr_gemm.cpp prepares a `bsr_problem`, runs the threads and calls one build's
// `pack` and `compute`; the builds (bsr_gemm_{portable,avx2,avx512}.cpp) share one body,
// bsr_gemm_body.hpp, and differ only in their vector operations and register tile.

#include <cstdint>

#include "inferopt/sparse/bsr_gemm.hpp"

namespace inferopt::sparse::detail {

// X (m x k, row stride ldx) packed as panels of X^T, `panel_rows` rows of X wide (a constant
// of each build, below): panel p holds rows p*panel_rows .. (p+1)*panel_rows - 1 of X as a
// k_pad x panel_rows row-major array at xt + p * k_pad * panel_rows, zero beyond m and k.
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

// One namespace per build. Each has a register tile of `tile_outputs` outputs x `panel_rows`
// rows of X (panel_rows / lanes vectors); bsr_gemm.cpp packs X with the panel_rows of the
// build it runs. `available` is false when the file was compiled without its instruction-set
// flags; bsr_gemm.cpp then never calls its `pack` or `compute`.
namespace isa_portable {
// Three 8-float vectors, as in the AVX2 build.
inline constexpr std::int64_t panel_rows = 24;
inline constexpr int tile_outputs = 4;
[[nodiscard]] bool available() noexcept;
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;  // panels [p0, p1)
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;  // output blocks [b0, b1)
}  // namespace isa_portable

namespace isa_avx2 {
// 4 x 3 accumulators, 3 X^T vectors and a broadcast weight fill the 16 ymm registers.
inline constexpr std::int64_t panel_rows = 24;
inline constexpr int tile_outputs = 4;
[[nodiscard]] bool available() noexcept;
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;
}  // namespace isa_avx2

namespace isa_avx512 {
// Four 16-float vectors x 4 outputs: 16 accumulators, 4 X^T vectors, and weights broadcast
// from memory inside the FMAs. Measured on one core against 48 x 4, 48 x 8, 32 x 8, 32 x 12
// and 16 x 16 (up to 24 accumulators): the wider output tiles won by up to 10% with 16x16 and
// 32x32 blocks and lost up to 35% with 4x4 ones; this one was within 10% of the best for every
// block size and shape. 64 also divides the row counts we care about (128 tokens, 1024).
inline constexpr std::int64_t panel_rows = 64;
inline constexpr int tile_outputs = 4;
[[nodiscard]] bool available() noexcept;
void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;
void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;
}  // namespace isa_avx512

}  // namespace inferopt::sparse::detail
