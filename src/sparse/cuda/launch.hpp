#pragma once
// The launches of the sparse module's device kernels: what the host wrappers (src/sparse/cuda/)
// and the kernels (cuda/sparse/) agree on. Private: plain C++17 and the CUDA runtime API only, so
// that nvcc compiles it in its default language mode.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace inferopt::sparse::cuda::detail {

// One product Y = act(X S^T + bias) with S = op(W)^T in the device layout (device_bsr_view):
// block rows of S run along the outputs n, block columns along the reduction k, each block is
// width x depth, stored column-major (W's depth x width sub-block, row-major). Every pointer is
// device memory; the host wrapper has checked sizes, strides and alignment (can_implement).
struct kernel_params {
  std::int64_t m = 0;                  // rows of X and Y
  std::int64_t n = 0;                  // columns of Y
  std::int64_t k = 0;                  // columns of X
  const void* x = nullptr;             // m x k, row stride ldx, the element type of the kernel
  std::int64_t ldx = 0;
  const std::int32_t* row_ptr = nullptr;  // out_blocks + 1
  const std::int32_t* col_ind = nullptr;  // block column (along k) of every stored block
  const void* values = nullptr;           // nnz * width * depth, the element type of the kernel
  const std::int32_t* order = nullptr;    // out_blocks: the block rows, longest first
  std::int32_t width = 0;                 // block extent along n
  std::int32_t depth = 0;                 // block extent along k
  std::int64_t out_blocks = 0;            // block rows of S: ceil(n / width)
  const float* bias = nullptr;            // n values, or null
  int relu = 0;                           // apply max(v, 0) (NaN stays NaN) after the bias
  void* y = nullptr;                      // m x n, row stride ldy
  std::int64_t ldy = 0;
  int y_f32 = 1;                          // Y is fp32; otherwise it has the kernel's element type
};

// Rows of Y one thread block computes, per kernel (the grid is out_blocks * ceil(m / rows)).
constexpr std::int64_t tensor_core_tile_rows(int block) noexcept { return block == 64 ? 64 : 128; }
constexpr std::int64_t cuda_core_tile_rows = 64;

// fp16 / bf16 inputs, fp32 accumulation on tensor cores; square blocks of 16, 32 or 64.
cudaError_t launch_tensor_core_f16(const kernel_params& p, cudaStream_t stream) noexcept;
cudaError_t launch_tensor_core_bf16(const kernel_params& p, cudaStream_t stream) noexcept;
// fp32 on CUDA cores; any block shape up to 64 x 64.
cudaError_t launch_cuda_core_f32(const kernel_params& p, cudaStream_t stream) noexcept;

// Element types of the dense epilogue, as the public dtype enumerates them.
enum class element_type : int { f32 = 0, f16 = 1, bf16 = 2 };

// y[i, j] = act(src[i, j] + bias[j]) converted to y_type, for i < m, j < n. src is fp32 with row
// stride lds, or null for zeros; it may be y itself when y is fp32 and lds == ldy.
cudaError_t launch_dense_epilogue(const float* src, std::int64_t lds, void* y, element_type y_type, std::int64_t ldy,
                                  std::int64_t m, std::int64_t n, const float* bias, int relu,
                                  cudaStream_t stream) noexcept;

}  // namespace inferopt::sparse::cuda::detail
