#pragma once
// The definitions of host_resource. Included by host_resource.hpp; include that instead.

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

#include "inferopt/memory/detail/arithmetic.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory::detail {

inline constexpr std::size_t huge_page = std::size_t{2} << 20;

// Allocation and deallocation must agree on the alignment they pass to the runtime.
[[nodiscard]] inline std::size_t runtime_alignment(std::size_t alignment) noexcept {
  return std::max(alignment, alignof(std::max_align_t));
}

[[noreturn]] inline void host_allocation_failed(std::size_t bytes) {
  throw out_of_memory("host_resource: cannot allocate " + std::to_string(bytes) + " bytes");
}

// Maps `bytes` (rounded to 2 MiB) at an address aligned to max(alignment, 2 MiB): map the
// alignment's worth more, then unmap the slack on both sides.
inline void* map_aligned(std::size_t bytes, std::size_t alignment) {
  const std::size_t align = std::max(alignment, huge_page);
  const std::size_t size = round_up(bytes, huge_page);
  if (size < bytes || size + align < size) host_allocation_failed(bytes);
  void* raw = mmap(nullptr, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) host_allocation_failed(bytes);
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(start, align);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + size + align;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  auto* p = reinterpret_cast<void*>(aligned);
  madvise(p, size, MADV_HUGEPAGE);  // a hint: without transparent huge pages, plain pages serve
  return p;
}

}  // namespace inferopt::memory::detail

namespace inferopt::memory {

inline void* host_resource::do_allocate(std::size_t bytes, std::size_t alignment, stream_ref) {
  if (bytes >= mapped_threshold) return detail::map_aligned(bytes, alignment);
  try {
    return ::operator new(bytes, std::align_val_t{detail::runtime_alignment(alignment)});
  } catch (const std::bad_alloc&) {
    detail::host_allocation_failed(bytes);
  }
}

inline void host_resource::do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref) noexcept {
  if (bytes >= mapped_threshold) {
    munmap(ptr, detail::round_up(bytes, detail::huge_page));
    return;
  }
  ::operator delete(ptr, std::align_val_t{detail::runtime_alignment(alignment)});
}

}  // namespace inferopt::memory
