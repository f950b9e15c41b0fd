#pragma once
/// The hook through which a pool learns that work queued on a stream has finished.

#include "inferopt/memory/stream_ref.hpp"

namespace inferopt::memory {

/// An opaque marker recorded on a stream (a `cudaEvent_t` on the device).
struct event_ref {
  void* handle = nullptr;
};

/// Stream-ordering hooks for `caching_pool`. A block freed on stream A is recorded with
/// `record(A)`; the pool may hand it to another stream once `has_completed` says the work
/// queued on A before the free is done. Host pools need no hooks: there, streams are only
/// keys, and cross-stream reuse waits for `caching_pool::synchronize`.
///
/// Implementations must be thread-safe for distinct events; the pool calls them under its lock.
class stream_events {
 public:
  virtual ~stream_events() = default;
  /// Marks the current end of `stream`'s queue. @throws inferopt::error when recording fails.
  virtual event_ref record(stream_ref stream) = 0;
  /// True when all work queued before `event` was recorded has finished. Non-blocking.
  [[nodiscard]] virtual bool has_completed(event_ref event) noexcept = 0;
  /// Frees an event from `record`.
  virtual void destroy(event_ref event) noexcept = 0;
  /// Blocks until all work queued on `stream` so far has finished.
  virtual void synchronize(stream_ref stream) = 0;
};

}  // namespace inferopt::memory
