#include "inferopt/memory/cuda/stream_events_hooks.hpp"

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"

namespace inferopt::memory::cuda {

event_ref stream_events_hooks::record(stream_ref stream) {
  cudaEvent_t event = nullptr;
  detail::check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "stream_events_hooks: cudaEventCreate");
  const cudaError_t status = cudaEventRecord(event, static_cast<cudaStream_t>(stream.handle));
  if (status != cudaSuccess) {
    (void)cudaEventDestroy(event);
    detail::check(status, "stream_events_hooks: cudaEventRecord");
  }
  return event_ref{event};
}

bool stream_events_hooks::has_completed(event_ref event) noexcept {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event.handle));
  if (status == cudaErrorNotReady) (void)cudaGetLastError();
  return status == cudaSuccess;
}

void stream_events_hooks::destroy(event_ref event) noexcept { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event.handle)); }

void stream_events_hooks::synchronize(stream_ref stream) {
  detail::check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle)), "stream_events_hooks: cudaStreamSynchronize");
}

}  // namespace inferopt::memory::cuda
