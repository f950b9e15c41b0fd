#include "inferopt/memory/cuda/pinned_host_resource.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory::cuda {

void* pinned_host_resource::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref) {
  expects(alignment <= default_alignment, "pinned_host_resource aligns to at most 256 bytes");
  void* ptr = nullptr;
  if (cudaMallocHost(&ptr, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    throw out_of_memory("pinned_host_resource: cudaMallocHost cannot allocate " + std::to_string(bytes) + " bytes");
  }
  return ptr;
}

void pinned_host_resource::do_deallocate(void* ptr, std::size_t, std::size_t, stream_ref) noexcept {
  (void)cudaFreeHost(ptr);
}

bool pinned_host_resource::do_is_equal(const memory_resource& other) const noexcept {
  return dynamic_cast<const pinned_host_resource*>(&other) != nullptr;
}

}  // namespace inferopt::memory::cuda
