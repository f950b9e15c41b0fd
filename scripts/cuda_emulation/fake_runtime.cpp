// The CUDA runtime and cuBLAS calls of the sparse module and its tests, over host memory, for
// the emulation (see README.md). Linked instead of libcudart and libcublas.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>

static float load(const void* p, cudaDataType t, std::int64_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: std::abort();
  }
}

extern "C" {
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (posix_memalign(p, 256, bytes == 0 ? 1 : bytes) != 0) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xA5, bytes);  // garbage, not zeros; exact size so that ASan sees overruns
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) { std::memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* c) { *c = 1; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "fake error"; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) { *h = reinterpret_cast<cublasHandle_t>(0x1234); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
const char* cublasGetStatusString(cublasStatus_t) { return "fake cublas error"; }
// Column-major C = alpha op(A) op(B) + beta C, as the BLAS define it; only what the dispatcher uses.
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t ctype,
                            cublasGemmAlgo_t) {
  if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || ct != CUDA_R_32F || ctype != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (lda < m || ldb < k || ldc < m || m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  auto* c = static_cast<float*>(C);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      float s = 0;
      for (int l = 0; l < k; ++l) s += load(A, at, i + std::int64_t{l} * lda) * load(B, bt, l + std::int64_t{j} * ldb);
      c[i + std::int64_t{j} * ldc] = a * s + (b != 0 ? b * c[i + std::int64_t{j} * ldc] : 0.0F);
    }
  return CUBLAS_STATUS_SUCCESS;
}
}
