#pragma once
// What every instruction-set build of the CPU block-sparse GEMM works on. bsr_gemm_impl.hpp
// prepares a `bsr_problem`, runs the threads and calls one build's `pack` and `compute`
// through its config (bsr_gemm_config.hpp); the builds (bsr_gemm_{portable,avx2,avx512}.hpp)
// share one body, bsr_gemm_body.hpp, and differ only in their vector operations, register
// tile and function target attributes.

#include <cstdint>

#include "inferopt/sparse/bsr_gemm.hpp"

// The AVX2 and AVX-512 builds need <immintrin.h> and function target attributes: GCC or Clang
// on x86-64 (what CMake used to compile them for with per-file flags). Elsewhere only the
// portable build exists.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define INFEROPT_SPARSE_X86_BUILDS 1
#else
#define INFEROPT_SPARSE_X86_BUILDS 0
#endif

namespace inferopt::sparse::detail {

// X (m x k, row stride ldx) packed as panels of X^T, `panel_rows` rows of X wide (a constant
// of each build): panel p holds rows p*panel_rows .. (p+1)*panel_rows - 1 of X as a
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

// The two entry points of a build: pack panels [p0, p1) of X, compute output blocks [b0, b1).
using bsr_pack_fn = void (*)(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept;
using bsr_compute_fn = void (*)(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept;

}  // namespace inferopt::sparse::detail
