#include "inferopt/memory/cuda/device.hpp"

#include <cuda_runtime_api.h>

namespace inferopt::memory::cuda {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace inferopt::memory::cuda
