#pragma once
/// Host memory from the C++ runtime, aligned as asked.

#include <cstddef>

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory {

/// Pageable host memory. Requests of at least `mapped_threshold` (2 MiB) are mapped straight
/// from the kernel, aligned to 2 MiB and marked for transparent huge pages: a pool's segments
/// then cost one TLB entry per 2 MiB, and they never sit in malloc's heap, where they would
/// keep it from shrinking. Smaller requests use aligned `operator new`. Stateless: every
/// `host_resource` equals every other, so memory may be freed through any instance. Streams
/// are ignored (host memory is usable at once). Thread-safe. Linux only (mmap, madvise).
class host_resource final : public memory_resource {
 public:
  static constexpr std::size_t mapped_threshold = std::size_t{2} << 20;

  host_resource() = default;
  host_resource(const host_resource&) = delete;
  host_resource& operator=(const host_resource&) = delete;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref) override;
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref) noexcept override;
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override {
    return dynamic_cast<const host_resource*>(&other) != nullptr;
  }
};

}  // namespace inferopt::memory

#include "inferopt/memory/detail/host_resource_impl.hpp"
