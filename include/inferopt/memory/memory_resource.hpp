#pragma once
/// The one interface every allocator of the memory module implements.

#include <cstddef>

#include "inferopt/core/error.hpp"
#include "inferopt/memory/stream_ref.hpp"

namespace inferopt::memory {

/// Alignment every resource guarantees when the caller asks for none in particular; it
/// matches what CUDA allocations give, so host and device code can share layouts.
inline constexpr std::size_t default_alignment = 256;

/// Free space a resource holds for reuse, as far as it knows (zero for resources that cache
/// nothing). Used to report fragmentation.
struct free_space_info {
  std::size_t free_bytes = 0;     ///< cached and unused
  std::size_t largest_block = 0;  ///< largest single request that fits without growing
};

/// A source of memory with stream-ordered semantics.
///
/// The public functions are non-virtual and forward to private `do_*` hooks, so that the base
/// can check preconditions for every resource in one place, and adaptors (statistics, limits,
/// tracking) wrap any resource without its cooperation.
///
/// Contract:
/// - `allocate(bytes, alignment, stream)` returns memory aligned to at least `alignment`
///   (a power of two), usable by work ordered on `stream` at once. Zero bytes returns nullptr.
/// - `deallocate` must receive the same bytes, alignment and the stream whose work last uses
///   the memory; the resource may hand it to later work on that stream at once, and to other
///   streams only once that stream's work has finished (see `caching_pool::synchronize`).
/// - Two resources are equal when memory from one can be freed by the other.
///
/// Thread safety: as documented by each implementation.
class memory_resource {
 public:
  virtual ~memory_resource() = default;

  /// @throws out_of_memory (a `std::bad_alloc`) when no memory is available;
  ///         inferopt::error(errc::invalid_argument) when `alignment` is not a power of two.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = default_alignment, stream_ref stream = {}) {
    expects(alignment != 0 && (alignment & (alignment - 1)) == 0, "alignment must be a power of two");
    if (bytes == 0) return nullptr;
    return do_allocate(bytes, alignment, stream);
  }

  /// Returns memory obtained from `allocate` with the same arguments. Never throws.
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment,
                  stream_ref stream = {}) noexcept {
    if (ptr == nullptr) return;
    do_deallocate(ptr, bytes, alignment, stream);
  }

  [[nodiscard]] bool is_equal(const memory_resource& other) const noexcept {
    return this == &other || do_is_equal(other);
  }

  /// What this resource (or the pool it wraps) caches for reuse.
  [[nodiscard]] free_space_info free_space() const { return do_free_space(); }

 private:
  virtual void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept = 0;
  [[nodiscard]] virtual bool do_is_equal(const memory_resource& other) const noexcept { return this == &other; }
  [[nodiscard]] virtual free_space_info do_free_space() const { return {}; }
};

}  // namespace inferopt::memory
