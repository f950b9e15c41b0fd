#pragma once
// Test resources for the memory module: an upstream with a byte budget, and stream hooks
// whose events complete when the test says so.

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "inferopt/memory/host_resource.hpp"
#include "inferopt/memory/out_of_memory.hpp"
#include "inferopt/memory/stream_events.hpp"

namespace inferopt::test {

/// Host memory that throws out_of_memory once `capacity` bytes are live; counts calls.
class capped_resource final : public memory::memory_resource {
 public:
  explicit capped_resource(std::size_t capacity) : capacity_(capacity) {}
  std::size_t live_bytes = 0;
  std::size_t allocations = 0;
  std::size_t failures = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, memory::stream_ref s) override {
    if (live_bytes + bytes > capacity_) {
      failures += 1;
      throw memory::out_of_memory("capped_resource: " + std::to_string(bytes) + " bytes over capacity");
    }
    void* p = host_.allocate(bytes, alignment, s);
    live_bytes += bytes;
    allocations += 1;
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment, memory::stream_ref s) noexcept override {
    host_.deallocate(p, bytes, alignment, s);
    live_bytes -= bytes;
  }
  memory::host_resource host_;
  std::size_t capacity_;
};

/// Events that complete only when `complete_all` is called; records synchronize calls.
class manual_events final : public memory::stream_events {
 public:
  memory::event_ref record(memory::stream_ref) override {
    std::lock_guard lock(mutex_);
    const std::uintptr_t id = ++next_;
    pending_.insert(id);
    return memory::event_ref{reinterpret_cast<void*>(id)};
  }
  bool has_completed(memory::event_ref e) noexcept override {
    std::lock_guard lock(mutex_);
    return !pending_.contains(reinterpret_cast<std::uintptr_t>(e.handle));
  }
  void destroy(memory::event_ref e) noexcept override {
    std::lock_guard lock(mutex_);
    pending_.erase(reinterpret_cast<std::uintptr_t>(e.handle));
    destroyed += 1;
  }
  void synchronize(memory::stream_ref) override { synchronized += 1; }
  /// Completes the `n`-th recorded event (counting from 1).
  void complete(std::uintptr_t n) {
    std::lock_guard lock(mutex_);
    pending_.erase(n);
  }
  void complete_all() {
    std::lock_guard lock(mutex_);
    pending_.clear();
  }
  std::size_t destroyed = 0;
  std::size_t synchronized = 0;

 private:
  std::mutex mutex_;
  std::uintptr_t next_ = 0;
  std::set<std::uintptr_t> pending_;
};

inline constexpr std::size_t kib = 1024;
inline constexpr std::size_t mib = 1024 * 1024;

}  // namespace inferopt::test
