#pragma once
/// A non-owning, opaque handle to an ordered work queue (a CUDA stream on the device, only a
/// key on the host). Memory resources use it to decide when freed memory may be reused.

#include <cstddef>
#include <functional>

namespace inferopt::memory {

/// Names a stream without owning it. The default (null handle) is the default stream. The
/// memory module never dereferences the handle; CUDA resources cast it to `cudaStream_t`.
struct stream_ref {
  void* handle = nullptr;

  friend bool operator==(stream_ref, stream_ref) = default;
};

}  // namespace inferopt::memory

template <>
struct std::hash<inferopt::memory::stream_ref> {
  std::size_t operator()(inferopt::memory::stream_ref s) const noexcept { return std::hash<void*>{}(s.handle); }
};
