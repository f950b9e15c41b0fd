#pragma once
/// Page-locked host memory (cudaMallocHost), for fast and asynchronous copies.

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory::cuda {

/// Pinned host memory; aligned to at least 256 bytes (larger alignments are refused).
/// All instances are equal. Thread-safe. Requires a build with CUDA.
/// @throws out_of_memory when cudaMallocHost fails.
class pinned_host_resource final : public memory_resource {
 public:
  pinned_host_resource() = default;
  pinned_host_resource(const pinned_host_resource&) = delete;
  pinned_host_resource& operator=(const pinned_host_resource&) = delete;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override;
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override;
};

}  // namespace inferopt::memory::cuda
