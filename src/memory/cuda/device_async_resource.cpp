#include "inferopt/memory/cuda/device_async_resource.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <string>

#include "cuda_check.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory::cuda {

device_async_resource::device_async_resource() {
  int device = 0;
  detail::check(cudaGetDevice(&device), "device_async_resource: cudaGetDevice");
  int supported = 0;
  detail::check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device),
                "device_async_resource: cudaDeviceGetAttribute");
  if (supported == 0) throw error(errc::unsupported, "device_async_resource: device " + std::to_string(device) + " has no memory pools");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  detail::check(cudaMemPoolCreate(&pool, &props), "device_async_resource: cudaMemPoolCreate");
  // Keep freed memory in the pool: the default threshold (0) returns it at every synchronize.
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) != cudaSuccess) {
    (void)cudaMemPoolDestroy(pool);
    detail::check(cudaErrorInvalidValue, "device_async_resource: cudaMemPoolSetAttribute");
  }
  pool_ = pool;
}

device_async_resource::~device_async_resource() { (void)cudaMemPoolDestroy(static_cast<cudaMemPool_t>(pool_)); }

void* device_async_resource::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) {
  expects(alignment <= default_alignment, "device_async_resource aligns to at most 256 bytes");
  void* ptr = nullptr;
  if (cudaMallocFromPoolAsync(&ptr, bytes, static_cast<cudaMemPool_t>(pool_), static_cast<cudaStream_t>(stream.handle)) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    throw out_of_memory("device_async_resource: cudaMallocFromPoolAsync cannot allocate " + std::to_string(bytes) + " bytes");
  }
  return ptr;
}

void device_async_resource::do_deallocate(void* ptr, std::size_t, std::size_t, stream_ref stream) noexcept {
  (void)cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream.handle));
}

}  // namespace inferopt::memory::cuda
