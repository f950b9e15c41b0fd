#pragma once
/// Stream-ordered device memory from the driver's pool (cudaMallocAsync).

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory::cuda {

/// Allocates with cudaMallocAsync from a memory pool owned by this resource. The pool's
/// release threshold is set to "never", so freed memory stays cached in the driver instead of
/// going back to the system at every stream synchronization. Freed memory is reused in stream
/// order by the driver. Thread-safe. Requires a build with CUDA.
class device_async_resource final : public memory_resource {
 public:
  /// Creates the pool on the current device.
  /// @throws inferopt::error(errc::unsupported) when the device has no memory pools.
  device_async_resource();
  device_async_resource(const device_async_resource&) = delete;
  device_async_resource& operator=(const device_async_resource&) = delete;
  ~device_async_resource() override;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override;

  void* pool_ = nullptr;  // cudaMemPool_t, owned
};

}  // namespace inferopt::memory::cuda
