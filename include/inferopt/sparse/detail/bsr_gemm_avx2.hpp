#pragma once
// The AVX2 + FMA build of the CPU block-sparse GEMM: the shared body on 8-float ymm vectors.
// Every function of the build is compiled for AVX2 + FMA through a target region (function
// target attributes), whatever flags the including file has, and runs only when the CPU probe
// says so (bsr_gemm_config.hpp). Without GCC or Clang on x86-64 the build does not exist.

#include <cstdint>

#include "inferopt/sparse/detail/bsr_gemm_isa.hpp"

namespace inferopt::sparse::detail::bsr_avx2 {

// 4 x 3 accumulators, 3 X^T vectors and a broadcast weight fill the 16 ymm registers.
inline constexpr std::int64_t panel_rows = 24;
inline constexpr int tile_outputs = 4;

}  // namespace inferopt::sparse::detail::bsr_avx2

#if INFEROPT_SPARSE_X86_BUILDS
#include "inferopt/sparse/detail/x86_intrinsics.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#define INFEROPT_SPARSE_ISA bsr_avx2
#include "inferopt/sparse/detail/bsr_gemm_avx2_ops.hpp"

namespace inferopt::sparse::detail::bsr_avx2 {
using ops = avx2_ops;
}  // namespace inferopt::sparse::detail::bsr_avx2

#include "inferopt/sparse/detail/bsr_gemm_body.hpp"
#undef INFEROPT_SPARSE_ISA

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // INFEROPT_SPARSE_X86_BUILDS
