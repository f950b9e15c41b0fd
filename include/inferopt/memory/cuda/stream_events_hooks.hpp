#pragma once
/// CUDA events as the stream-ordering hooks of a device `caching_pool`.

#include "inferopt/memory/stream_events.hpp"

namespace inferopt::memory::cuda {

/// Implements `stream_events` with timing-free CUDA events and cudaStreamSynchronize.
/// Stateless and thread-safe. Requires a build with CUDA.
class stream_events_hooks final : public stream_events {
 public:
  event_ref record(stream_ref stream) override;
  [[nodiscard]] bool has_completed(event_ref event) noexcept override;
  void destroy(event_ref event) noexcept override;
  void synchronize(stream_ref stream) override;
};

}  // namespace inferopt::memory::cuda
