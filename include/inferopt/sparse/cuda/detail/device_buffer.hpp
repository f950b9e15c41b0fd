#pragma once
// An owning span of device memory from a borrowed memory resource. Internal to the sparse
// module's device types; may change at any time.

#include <cstddef>
#include <utility>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/stream_ref.hpp"

namespace inferopt::sparse::cuda::detail {

/// `bytes` bytes from `resource`, given back (on `stream`) when this buffer dies. The
/// resource must outlive the buffer. Move-only; a moved-from buffer is empty.
class device_buffer {
 public:
  device_buffer() noexcept = default;
  /// @throws whatever `resource.allocate` throws (memory::out_of_memory).
  device_buffer(memory::memory_resource& resource, std::size_t bytes, memory::stream_ref stream)
      : resource_(&resource), bytes_(bytes), stream_(stream), data_(resource.allocate(bytes, alignment, stream)) {}
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& other) noexcept { swap(other); }
  device_buffer& operator=(device_buffer&& other) noexcept {
    device_buffer(std::move(other)).swap(*this);
    return *this;
  }
  ~device_buffer() {
    if (resource_ != nullptr) resource_->deallocate(data_, bytes_, alignment, stream_);
  }

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  // Every buffer is 256-byte aligned: more than the 16 bytes the tensor-core kernel's copies need.
  static constexpr std::size_t alignment = memory::default_alignment;

  void swap(device_buffer& other) noexcept {
    std::swap(resource_, other.resource_);
    std::swap(bytes_, other.bytes_);
    std::swap(stream_, other.stream_);
    std::swap(data_, other.data_);
  }

  memory::memory_resource* resource_ = nullptr;  // null only when empty
  std::size_t bytes_ = 0;
  memory::stream_ref stream_;
  void* data_ = nullptr;  // null when bytes_ == 0
};

}  // namespace inferopt::sparse::cuda::detail
