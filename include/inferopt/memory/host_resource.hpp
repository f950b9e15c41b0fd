#pragma once
/// Host memory from the C++ runtime, aligned as asked.

#include <algorithm>
#include <new>
#include <string>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory {

/// Pageable host memory through aligned `operator new`. Stateless: every `host_resource`
/// equals every other, so memory may be freed through any instance. Streams are ignored
/// (host memory is usable at once). Thread-safe.
class host_resource final : public memory_resource {
 public:
  host_resource() = default;
  host_resource(const host_resource&) = delete;
  host_resource& operator=(const host_resource&) = delete;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref) override {
    try {
      return ::operator new(bytes, std::align_val_t{effective(alignment)});
    } catch (const std::bad_alloc&) {
      throw out_of_memory("host_resource: cannot allocate " + std::to_string(bytes) + " bytes");
    }
  }
  void do_deallocate(void* ptr, std::size_t, std::size_t alignment, stream_ref) noexcept override {
    ::operator delete(ptr, std::align_val_t{effective(alignment)});
  }
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override {
    return dynamic_cast<const host_resource*>(&other) != nullptr;
  }
  // Allocation and deallocation must agree on the alignment they pass to the runtime.
  static std::size_t effective(std::size_t alignment) noexcept {
    return std::max(alignment, alignof(std::max_align_t));
  }
};

}  // namespace inferopt::memory
