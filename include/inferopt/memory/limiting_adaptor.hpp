#pragma once
/// Caps the bytes live through a resource.

#include <cstddef>
#include <mutex>
#include <string>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/out_of_memory.hpp"

namespace inferopt::memory {

/// Forwards to an upstream while the requested bytes live through it stay within a limit;
/// a request past the limit throws `out_of_memory` without reaching the upstream. The
/// upstream must outlive the adaptor. Thread-safe.
class limiting_adaptor final : public memory_resource {
 public:
  limiting_adaptor(memory_resource& upstream, std::size_t limit_bytes) noexcept
      : upstream_(&upstream), limit_(limit_bytes) {}
  limiting_adaptor(const limiting_adaptor&) = delete;
  limiting_adaptor& operator=(const limiting_adaptor&) = delete;

  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  [[nodiscard]] std::size_t used_bytes() const {
    std::lock_guard lock(mutex_);
    return used_;
  }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment, stream_ref stream) override {
    {
      std::lock_guard lock(mutex_);
      if (bytes > limit_ - used_) {
        throw out_of_memory("limiting_adaptor: allocating " + std::to_string(bytes) + " bytes would exceed the limit of " +
                            std::to_string(limit_) + " bytes (" + std::to_string(used_) + " in use)");
      }
      used_ += bytes;  // reserve first so concurrent callers cannot overshoot together
    }
    try {
      return upstream_->allocate(bytes, alignment, stream);
    } catch (...) {
      std::lock_guard lock(mutex_);
      used_ -= bytes;
      throw;
    }
  }
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept override {
    upstream_->deallocate(ptr, bytes, alignment, stream);
    std::lock_guard lock(mutex_);
    used_ -= bytes;
  }
  [[nodiscard]] free_space_info do_free_space() const override { return upstream_->free_space(); }

  memory_resource* upstream_;  // never null
  std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;  // always <= limit_
};

}  // namespace inferopt::memory
