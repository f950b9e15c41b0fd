#pragma once
// CUDA and cuBLAS status codes as kernel_status values (noexcept paths) or exceptions (the
// throwing host wrappers), in the host code only (STYLE.md).

#include <cuda_runtime_api.h>

#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/kernel_status.hpp"

namespace inferopt::sparse::cuda::detail {

// ok for cudaSuccess; otherwise "<what>: <CUDA's error string>". Resets the last-error slot so
// that later calls do not report this error again. Never throws.
inline kernel_status status_of(cudaError_t status, const char* what) noexcept {
  if (status == cudaSuccess) return {};
  (void)cudaGetLastError();
  try {
    return {std::string(what) + ": " + cudaGetErrorString(status)};
  } catch (...) {  // only allocating the message can fail; short strings need no allocation
    return {"out of memory"};
  }
}

inline void check(cudaError_t status, const char* what) {
  const kernel_status s = status_of(status, what);
  if (!s) throw error(errc::internal, s.reason);
}

}  // namespace inferopt::sparse::cuda::detail
