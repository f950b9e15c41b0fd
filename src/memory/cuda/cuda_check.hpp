#pragma once
// Turns CUDA error codes into exceptions, in the host wrappers only (STYLE.md).

#include <cuda_runtime_api.h>

#include <string>

#include "inferopt/core/error.hpp"

namespace inferopt::memory::cuda::detail {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error state for the next call
    throw error(errc::internal, std::string(what) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace inferopt::memory::cuda::detail
