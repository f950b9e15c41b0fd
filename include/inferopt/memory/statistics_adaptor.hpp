#pragma once
/// Counts what flows through a resource: bytes and allocations, current and peak.

#include <algorithm>
#include <cstddef>
#include <mutex>

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory {

/// A snapshot of a `statistics_adaptor`'s counters.
struct allocation_statistics {
  std::size_t current_bytes = 0;        ///< requested bytes now live
  std::size_t peak_bytes = 0;           ///< maximum of current_bytes so far
  std::size_t total_bytes = 0;          ///< requested bytes over all allocations
  std::size_t current_allocations = 0;  ///< live allocations
  std::size_t peak_allocations = 0;
  std::size_t total_allocations = 0;
};

/// Wraps a resource and counts requested bytes and calls. A debugging and reporting aid: it
/// takes a lock on every call. The upstream must outlive the adaptor. Thread-safe.
class statistics_adaptor final : public memory_resource {
 public:
  explicit statistics_adaptor(memory_resource& upstream) noexcept : upstream_(&upstream) {}
  statistics_adaptor(const statistics_adaptor&) = delete;
  statistics_adaptor& operator=(const statistics_adaptor&) = delete;

  [[nodiscard]] allocation_statistics statistics() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  /// 1 - largest free block / total free bytes of the upstream's cache: 0 when the free
  /// space is one block (or there is none), near 1 when it is scattered in small pieces.
  [[nodiscard]] double fragmentation() const {
    const free_space_info f = upstream_->free_space();
    if (f.free_bytes == 0) return 0.0;
    return 1.0 - static_cast<double>(f.largest_block) / static_cast<double>(f.free_bytes);
  }

  [[nodiscard]] memory_resource& upstream() const noexcept { return *upstream_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override {
    void* ptr = upstream_->allocate(bytes, alignment, stream);
    std::lock_guard lock(mutex_);
    stats_.current_bytes += bytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
    stats_.total_bytes += bytes;
    stats_.current_allocations += 1;
    stats_.peak_allocations = std::max(stats_.peak_allocations, stats_.current_allocations);
    stats_.total_allocations += 1;
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override {
    upstream_->deallocate(ptr, bytes, alignment, stream);
    std::lock_guard lock(mutex_);
    stats_.current_bytes -= bytes;
    stats_.current_allocations -= 1;
  }
  [[nodiscard]] free_space_info do_free_space() const override { return upstream_->free_space(); }

  memory_resource* upstream_;  // never null
  mutable std::mutex mutex_;
  allocation_statistics stats_;  // peak_* >= current_*; totals never decrease
};

}  // namespace inferopt::memory
