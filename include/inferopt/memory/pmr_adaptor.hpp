#pragma once
/// Lets standard containers (`std::pmr::vector`, ...) draw from any host-accessible resource.

#include <memory_resource>

#include "inferopt/memory/memory_resource.hpp"

namespace inferopt::memory {

/// A `std::pmr::memory_resource` that forwards to a borrowed `memory_resource` on one stream.
/// The upstream must outlive the adaptor and must return host-accessible memory (host,
/// pinned, or a pool over them). Thread safety is the upstream's.
class pmr_adaptor final : public std::pmr::memory_resource {
 public:
  explicit pmr_adaptor(memory::memory_resource& upstream, stream_ref stream = {}) noexcept
      : upstream_(&upstream), stream_(stream) {}
  pmr_adaptor(const pmr_adaptor&) = delete;
  pmr_adaptor& operator=(const pmr_adaptor&) = delete;

  [[nodiscard]] memory::memory_resource& upstream() const noexcept { return *upstream_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    // std::pmr requires a non-null result even for zero bytes.
    return upstream_->allocate(bytes == 0 ? 1 : bytes, alignment, stream_);
  }
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(ptr, bytes == 0 ? 1 : bytes, alignment, stream_);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    const auto* o = dynamic_cast<const pmr_adaptor*>(&other);
    return o != nullptr && o->stream_ == stream_ && upstream_->is_equal(*o->upstream_);
  }

  memory::memory_resource* upstream_;  // never null
  stream_ref stream_;
};

}  // namespace inferopt::memory
