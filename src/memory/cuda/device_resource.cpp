#include "inferopt/memory/cuda/device_resource.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda_check.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory::cuda {

device_resource::device_resource() { detail::check(cudaGetDevice(&device_), "device_resource: cudaGetDevice"); }

void* device_resource::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref) {
  expects(alignment <= default_alignment, "device_resource aligns to at most 256 bytes");
  void* ptr = nullptr;
  if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    throw out_of_memory("device_resource: cudaMalloc cannot allocate " + std::to_string(bytes) + " bytes on device " +
                        std::to_string(device_));
  }
  return ptr;
}

void device_resource::do_deallocate(void* ptr, std::size_t, std::size_t, stream_ref) noexcept { (void)cudaFree(ptr); }

bool device_resource::do_is_equal(const memory_resource& other) const noexcept {
  const auto* o = dynamic_cast<const device_resource*>(&other);
  return o != nullptr && o->device_ == device_;
}

}  // namespace inferopt::memory::cuda
