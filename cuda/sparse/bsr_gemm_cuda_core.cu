// The fp32 block-sparse GEMM on CUDA cores, for any block shape up to 64 x 64. Host side:
// src/sparse/cuda/bsr_gemm.cpp.
//
// Same work list as the tensor-core kernel (bsr_gemm_tensor_core.cu): one thread block per
// (block row of S, 64 rows of X), block rows with the most stored blocks first. For each stored
// block, the 64 x depth slice of X and the depth x width block of W go to shared memory
// (zero-filled outside X and past the block's width), then each of the 256 threads accumulates
// a 4 x 4 register tile: rows tr + 16 i, columns tc + 16 j (tr, tc = thread / 16, thread % 16),
// which covers 64 x 64 outputs. A warp reads two rows of the X slice (broadcasts) and 16
// consecutive words of the W block, so shared memory serves both without bank conflicts.
//
// Kept simple on purpose: no pipelining, and blocks narrower than 64 leave columns of threads
// idle (a 16-wide block uses a quarter of them). Each output is a float32 sum with fused
// multiply-adds in the order of the stored blocks and, within a block, of k, as on the CPU.

#include <cstdint>

#include "../../src/sparse/cuda/launch.hpp"

namespace inferopt::sparse::cuda::detail {

namespace {

constexpr int threads = 256;
constexpr int tile = 64;  // rows of X per thread block, and the largest block extent
static_assert(tile == cuda_core_tile_rows, "launch.hpp states the tile rows");

__global__ void __launch_bounds__(threads) cuda_core_kernel(const kernel_params p) {
  __shared__ float xs[tile][tile + 1];  // [row][kk]; the +1 keeps column walks conflict-free
  __shared__ float ws[tile][tile];      // [kk][nn]

  const std::int64_t row_tiles = (p.m + tile - 1) / tile;
  const std::int64_t item = blockIdx.x;
  const std::int32_t j = p.order[item / row_tiles];
  const std::int64_t m0 = (item % row_tiles) * tile;
  const int tid = static_cast<int>(threadIdx.x);
  const int tr = tid / 16;
  const int tc = tid % 16;
  const int depth = p.depth;
  const int width = p.width;
  const auto* x = static_cast<const float*>(p.x);
  const auto* values = static_cast<const float*>(p.values);

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[i][c] = 0.0F;
  }

  for (std::int32_t e = p.row_ptr[j]; e < p.row_ptr[j + 1]; ++e) {
    const std::int64_t k0 = std::int64_t{p.col_ind[e]} * depth;
    const float* w = values + std::int64_t{e} * depth * width;
    __syncthreads();  // every thread is done with the previous block
    for (int idx = tid; idx < tile * depth; idx += threads) {
      const int r = idx / depth;
      const int kk = idx % depth;
      const std::int64_t gr = m0 + r;
      const std::int64_t gk = k0 + kk;
      xs[r][kk] = (gr < p.m && gk < p.k) ? x[gr * p.ldx + gk] : 0.0F;
    }
    for (int idx = tid; idx < depth * tile; idx += threads) {
      const int kk = idx / tile;
      const int nn = idx % tile;
      ws[kk][nn] = nn < width ? w[kk * width + nn] : 0.0F;
    }
    __syncthreads();
    for (int kk = 0; kk < depth; ++kk) {
      float a[4];
      float b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = xs[tr + 16 * i][kk];
#pragma unroll
      for (int c = 0; c < 4; ++c) b[c] = ws[kk][tc + 16 * c];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][c] = fmaf(a[i], b[c], acc[i][c]);
      }
    }
  }

  const std::int64_t n0 = std::int64_t{j} * width;
  auto* y = static_cast<float*>(p.y);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int col = tc + 16 * c;
      const std::int64_t gr = m0 + tr + 16 * i;
      const std::int64_t gc = n0 + col;
      if (col >= width || gr >= p.m || gc >= p.n) continue;
      float v = acc[i][c];
      if (p.bias != nullptr) v += p.bias[gc];
      if (p.relu != 0 && v < 0.0F) v = 0.0F;  // NaN stays NaN
      y[gr * p.ldy + gc] = v;
    }
  }
}

}  // namespace

cudaError_t launch_cuda_core_f32(const kernel_params& p, cudaStream_t stream) noexcept {
  const std::int64_t row_tiles = (p.m + tile - 1) / tile;
  const std::int64_t items = row_tiles * p.out_blocks;  // the host checked it fits a grid
  if (items == 0) return cudaSuccess;
  cuda_core_kernel<<<static_cast<unsigned>(items), threads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace inferopt::sparse::cuda::detail
