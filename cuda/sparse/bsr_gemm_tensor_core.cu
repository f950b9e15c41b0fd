// The tensor-core block-sparse GEMM: fp16 or bf16 inputs, fp32 accumulation (wmma 16x16x16),
// square blocks of 16, 32 or 64. Host side: src/sparse/cuda/bsr_gemm.cpp.
//
// Work decomposition. One thread block computes a tile of Y: `tile_rows` rows of X times one
// block row j of S = op(W)^T, i.e. `Block` adjacent columns of Y. It walks the stored blocks
// of row j (each pairs a Block-wide slice of X's columns with one Block x Block block of W),
// accumulates in registers and writes its tile once, with bias and activation applied: no
// atomics, no second pass, deterministic results.
//
// Load balance. Block rows hold different numbers of stored blocks. The grid is a flat work
// list of (block row, row tile) items, ordered by the device matrix's `order` array (block
// rows with the most stored blocks first, longest-processing-time-first), the row tiles of one
// block row adjacent so that they share its weights in L2. The hardware hands out thread
// blocks in index order as SMs free up, so long items start first and short ones fill the
// tail, without a software queue.
//
// Pipeline. Each stored block is copied into shared memory with cp.async (16 bytes per
// thread, zero-filled past the ends of X), `stages` deep, while the tensor cores work on the
// previous one. X must be 16-byte aligned with a row stride that is a multiple of 8 elements
// (can_implement refuses otherwise); the last 16-byte chunk of a row past k copies only the
// elements before k, so whatever lies in X's padding (NaN included) never reaches the sum.
// W's blocks store zeros outside the matrix (bsr_matrix's invariant), so edge blocks need no
// other masking.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "../../src/sparse/cuda/launch.hpp"

namespace inferopt::sparse::cuda::detail {

namespace {

namespace wmma = nvcuda::wmma;

// The tile of one thread block. Four warps; each owns 32 rows x min(Block, 32) columns of the
// tile (2 x 1, 2 x 2 or 2 x 2 accumulator fragments of 16 x 16).
template <int Block>
struct tile_config {
  static constexpr int threads = 128;
  static constexpr int warps = threads / 32;
  static constexpr int warp_cols = Block < 32 ? Block : 32;
  static constexpr int warps_n = Block / warp_cols;
  static constexpr int warps_m = warps / warps_n;
  static constexpr int warp_rows = 32;
  static constexpr int tile_rows = warp_rows * warps_m;
  static constexpr int frags_m = warp_rows / 16;
  static constexpr int frags_n = warp_cols / 16;
  // Shared memory rows are padded by 8 elements (16 bytes) so that the rows of a 16 x 16
  // fragment start in different banks; the stride stays a multiple of 8 elements, as wmma needs.
  static constexpr int ld = Block + 8;
  static constexpr int x_elems = tile_rows * ld;  // tile_rows x Block slice of X
  static constexpr int w_elems = Block * ld;      // Block x Block block of W (k x n, row-major)
  static constexpr int stage_elems = x_elems + w_elems;
  static constexpr int stages = Block == 64 ? 2 : 3;  // keeps the static limit of 48 KiB
  static constexpr int ld_out = Block + 4;             // fp32 tile for the epilogue, aliasing the stages
  static constexpr int in_bytes = stages * stage_elems * 2;
  static constexpr int out_bytes = tile_rows * ld_out * 4;
  static constexpr int smem_bytes = in_bytes > out_bytes ? in_bytes : out_bytes;

  static_assert(Block == 16 || Block == 32 || Block == 64, "tensor-core blocks are 16, 32 or 64");
  static_assert(warps_m * warps_n == warps, "the warps tile the thread block");
  static_assert(tile_rows == tensor_core_tile_rows(Block), "launch.hpp states the tile rows");
  static_assert(smem_bytes <= 48 * 1024, "static shared memory is limited to 48 KiB");
  // wmma wants ldm to be a multiple of 8 elements (16-bit) or 4 (fp32), and fragment pointers
  // 32-byte aligned: every 16-row step and every stage is.
  static_assert(ld % 8 == 0 && ld_out % 4 == 0, "wmma leading dimensions");
  static_assert((16 * ld * 2) % 32 == 0 && (x_elems * 2) % 32 == 0 && (stage_elems * 2) % 32 == 0, "alignment");
  static_assert((16 * ld_out * 4) % 32 == 0, "alignment");
};

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Copies 16 bytes from global to shared memory without blocking; only the first `src_bytes`
// (0..16) are read, the rest is zero-filled. Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `Pending` of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// Starts copying stored block `e` (and the slice of X it multiplies) into one stage.
template <class T, int Block>
__device__ __forceinline__ void load_stage(const kernel_params& p, T* xs, T* ws, std::int64_t m0, std::int32_t e,
                                           int tid) {
  using cfg = tile_config<Block>;
  constexpr int chunks_per_row = Block / 8;  // 16-byte chunks of 8 elements
  const T* x = static_cast<const T*>(p.x);
  const std::int64_t k0 = std::int64_t{p.col_ind[e]} * Block;
  for (int c = tid; c < cfg::tile_rows * chunks_per_row; c += cfg::threads) {
    const int row = c / chunks_per_row;
    const int col = (c % chunks_per_row) * 8;
    const std::int64_t gr = m0 + row;
    const std::int64_t gc = k0 + col;
    std::int64_t valid = p.k - gc;  // elements of this chunk inside X
    valid = valid < 0 ? 0 : (valid > 8 ? 8 : valid);
    if (gr >= p.m) valid = 0;
    // Nothing is read for valid == 0; the address only has to be a valid aligned one.
    const T* src = valid > 0 ? x + gr * p.ldx + gc : x;
    cp_async_16(xs + row * cfg::ld + col, src, static_cast<int>(valid) * 2);
  }
  const T* w = static_cast<const T*>(p.values) + std::int64_t{e} * Block * Block;
  for (int c = tid; c < Block * chunks_per_row; c += cfg::threads) {
    const int row = c / chunks_per_row;
    const int col = (c % chunks_per_row) * 8;
    cp_async_16(ws + row * cfg::ld + col, w + row * Block + col, 16);
  }
}

template <class T, int Block>
__global__ void __launch_bounds__(tile_config<Block>::threads) tensor_core_kernel(const kernel_params p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800  // cp.async and bf16 wmma need sm_80
  using cfg = tile_config<Block>;
  __shared__ __align__(128) unsigned char smem[cfg::smem_bytes];
  T* const stage_mem = reinterpret_cast<T*>(smem);

  const std::int64_t row_tiles = (p.m + cfg::tile_rows - 1) / cfg::tile_rows;
  const std::int64_t item = blockIdx.x;
  const std::int32_t j = p.order[item / row_tiles];
  const std::int64_t m0 = (item % row_tiles) * cfg::tile_rows;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int warp_m = warp / cfg::warps_n;
  const int warp_n = warp % cfg::warps_n;
  const std::int32_t e0 = p.row_ptr[j];
  const std::int32_t blocks = p.row_ptr[j + 1] - e0;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[cfg::frags_m][cfg::frags_n];
#pragma unroll
  for (int fm = 0; fm < cfg::frags_m; ++fm) {
#pragma unroll
    for (int fn = 0; fn < cfg::frags_n; ++fn) wmma::fill_fragment(acc[fm][fn], 0.0F);
  }

  // Prologue: the first stages - 1 blocks in flight, one commit group each (empty past the end,
  // so that group i always holds block i).
#pragma unroll
  for (int s = 0; s < cfg::stages - 1; ++s) {
    if (s < blocks) {
      T* xs = stage_mem + s * cfg::stage_elems;
      load_stage<T, Block>(p, xs, xs + cfg::x_elems, m0, e0 + s, tid);
    }
    cp_async_commit();
  }

  for (std::int32_t i = 0; i < blocks; ++i) {
    // Groups 0 .. stages - 2 + i are committed; waiting until stages - 2 remain means group
    // (block) i has landed. The barrier makes every thread's copies visible, and tells that
    // every warp is done with block i - 1, whose stage the next copy overwrites.
    cp_async_wait<cfg::stages - 2>();
    __syncthreads();
    const std::int32_t next = i + cfg::stages - 1;
    if (next < blocks) {
      T* xs = stage_mem + (next % cfg::stages) * cfg::stage_elems;
      load_stage<T, Block>(p, xs, xs + cfg::x_elems, m0, e0 + next, tid);
    }
    cp_async_commit();

    const T* xs = stage_mem + (i % cfg::stages) * cfg::stage_elems;
    const T* ws = xs + cfg::x_elems;
#pragma unroll
    for (int kk = 0; kk < Block; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[cfg::frags_m];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[cfg::frags_n];
#pragma unroll
      for (int fm = 0; fm < cfg::frags_m; ++fm) {
        wmma::load_matrix_sync(a[fm], xs + (warp_m * cfg::warp_rows + fm * 16) * cfg::ld + kk, cfg::ld);
      }
#pragma unroll
      for (int fn = 0; fn < cfg::frags_n; ++fn) {
        wmma::load_matrix_sync(b[fn], ws + kk * cfg::ld + warp_n * cfg::warp_cols + fn * 16, cfg::ld);
      }
#pragma unroll
      for (int fm = 0; fm < cfg::frags_m; ++fm) {
#pragma unroll
        for (int fn = 0; fn < cfg::frags_n; ++fn) wmma::mma_sync(acc[fm][fn], a[fm], b[fn], acc[fm][fn]);
      }
    }
  }

  // Epilogue: the accumulators go through shared memory (the stages are free once every warp
  // is past its last block) so that the stores to Y are row-contiguous and masked per element.
  cp_async_wait<0>();
  __syncthreads();
  float* out = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int fm = 0; fm < cfg::frags_m; ++fm) {
#pragma unroll
    for (int fn = 0; fn < cfg::frags_n; ++fn) {
      float* tile = out + (warp_m * cfg::warp_rows + fm * 16) * cfg::ld_out + warp_n * cfg::warp_cols + fn * 16;
      wmma::store_matrix_sync(tile, acc[fm][fn], cfg::ld_out, wmma::mem_row_major);
    }
  }
  __syncthreads();
  const std::int64_t n0 = std::int64_t{j} * Block;
  for (int idx = tid; idx < cfg::tile_rows * Block; idx += cfg::threads) {
    const int r = idx / Block;
    const int c = idx % Block;
    const std::int64_t gr = m0 + r;
    const std::int64_t gc = n0 + c;
    if (gr >= p.m || gc >= p.n) continue;
    float v = out[r * cfg::ld_out + c];
    if (p.bias != nullptr) v += p.bias[gc];
    if (p.relu != 0 && v < 0.0F) v = 0.0F;  // NaN < 0 is false: NaN stays NaN
    if (p.y_f32 != 0) static_cast<float*>(p.y)[gr * p.ldy + gc] = v;
    else static_cast<T*>(p.y)[gr * p.ldy + gc] = from_float<T>(v);
  }
#endif
}

template <class T, int Block>
cudaError_t launch_block(const kernel_params& p, cudaStream_t stream) noexcept {
  using cfg = tile_config<Block>;
  const std::int64_t row_tiles = (p.m + cfg::tile_rows - 1) / cfg::tile_rows;
  const std::int64_t items = row_tiles * p.out_blocks;  // the host checked it fits a grid
  if (items == 0) return cudaSuccess;
  tensor_core_kernel<T, Block><<<static_cast<unsigned>(items), cfg::threads, 0, stream>>>(p);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch(const kernel_params& p, cudaStream_t stream) noexcept {
  switch (p.width) {
    case 16: return launch_block<T, 16>(p, stream);
    case 32: return launch_block<T, 32>(p, stream);
    case 64: return launch_block<T, 64>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_tensor_core_f16(const kernel_params& p, cudaStream_t stream) noexcept {
  return launch<__half>(p, stream);
}

cudaError_t launch_tensor_core_bf16(const kernel_params& p, cudaStream_t stream) noexcept {
  return launch<__nv_bfloat16>(p, stream);
}

}  // namespace inferopt::sparse::cuda::detail
