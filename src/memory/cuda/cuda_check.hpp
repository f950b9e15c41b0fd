#pragma once
// Turns CUDA error codes into exceptions, in the host wrappers only (STYLE.md).

#include <cuda_runtime_api.h>

#include <string>

#include "inferopt/core/error.hpp"

namespace inferopt::memory::cuda::detail {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // reset the last-error slot so later calls do not report this one
    throw error(errc::internal, std::string(what) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace inferopt::memory::cuda::detail
