// The epilogue of the dispatcher's dense path (src/sparse/cuda/gemm_dispatcher.cpp): cuBLAS
// computes the fp32 product, this adds the bias, applies the activation and converts to Y's
// type, so that the dense and sparse paths round the same way (once, from fp32).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "../../src/sparse/cuda/launch.hpp"

namespace inferopt::sparse::cuda::detail {

namespace {

constexpr int threads = 256;
constexpr std::int64_t max_blocks = 4096;  // a grid-stride loop covers the rest

__global__ void __launch_bounds__(threads)
    dense_epilogue_kernel(const float* src, std::int64_t lds, void* y, element_type y_type, std::int64_t ldy,
                          std::int64_t m, std::int64_t n, const float* bias, int relu) {
  const std::int64_t total = m * n;
  const std::int64_t stride = std::int64_t{gridDim.x} * threads;
  for (std::int64_t idx = std::int64_t{blockIdx.x} * threads + threadIdx.x; idx < total; idx += stride) {
    const std::int64_t r = idx / n;
    const std::int64_t c = idx % n;
    float v = src != nullptr ? src[r * lds + c] : 0.0F;
    if (bias != nullptr) v += bias[c];
    if (relu != 0 && v < 0.0F) v = 0.0F;  // NaN stays NaN
    switch (y_type) {
      case element_type::f32: static_cast<float*>(y)[r * ldy + c] = v; break;
      case element_type::f16: static_cast<__half*>(y)[r * ldy + c] = __float2half_rn(v); break;
      case element_type::bf16: static_cast<__nv_bfloat16*>(y)[r * ldy + c] = __float2bfloat16_rn(v); break;
    }
  }
}

}  // namespace

cudaError_t launch_dense_epilogue(const float* src, std::int64_t lds, void* y, element_type y_type, std::int64_t ldy,
                                  std::int64_t m, std::int64_t n, const float* bias, int relu,
                                  cudaStream_t stream) noexcept {
  if (m <= 0 || n <= 0) return cudaSuccess;
  std::int64_t blocks = (m * n + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  dense_epilogue_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(src, lds, y, y_type, ldy, m, n, bias,
                                                                             relu);
  return cudaGetLastError();
}

}  // namespace inferopt::sparse::cuda::detail
