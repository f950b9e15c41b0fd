#pragma once
/// Device memory from cudaMalloc on the current device.

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory::cuda {

/// Synchronous device memory (cudaMalloc/cudaFree; streams are ignored, cudaFree waits for
/// the device). Aligned to at least 256 bytes; larger alignments are refused. Instances are
/// equal when they serve the same device. Thread-safe. Requires a build with CUDA.
/// Usually wrapped in a `caching_pool` with `cuda::stream_events_hooks`.
/// @throws out_of_memory when cudaMalloc fails.
class device_resource final : public memory_resource {
 public:
  /// Serves the device current at construction.
  device_resource();
  device_resource(const device_resource&) = delete;
  device_resource& operator=(const device_resource&) = delete;

  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override;
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override;

  int device_ = 0;
};

}  // namespace inferopt::memory::cuda
