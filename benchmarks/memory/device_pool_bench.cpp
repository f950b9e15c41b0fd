// The device caching pool against cudaMalloc/cudaFree and cudaMallocAsync/cudaFreeAsync.
//
// Every allocator replays the same seeded sequence of sizes (log-uniform, 1 KiB to 64 MiB,
// the range of activation tensors), keeping a window of 32 live blocks, all on one stream.
// Each iteration replays the batch on the pool and on both CUDA allocators, so that the three
// share the machine's state; the reported time is the pool's, and the counters are
// cudaMalloc time / pool time and cudaMallocAsync time / pool time. Skips without a device.

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/cuda/device.hpp"
#include "inferopt/memory/cuda/device_async_resource.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"
#include "inferopt/memory/cuda/stream_events_hooks.hpp"
#include "replay.hpp"

namespace {

namespace memory = inferopt::memory;
using inferopt::bench::allocator;

constexpr std::size_t window = 32;

const std::vector<std::size_t>& sizes() {
  static const std::vector<std::size_t> s = inferopt::bench::log_uniform_sizes(1024, 1024.0, 64.0 * 1024 * 1024);
  return s;
}

class stream_owner {
 public:
  stream_owner() { cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~stream_owner() { cudaStreamDestroy(stream_); }
  stream_owner(const stream_owner&) = delete;
  stream_owner& operator=(const stream_owner&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }
  [[nodiscard]] memory::stream_ref ref() const { return memory::stream_ref{stream_}; }

 private:
  cudaStream_t stream_ = nullptr;
};

struct cuda_malloc_allocator final : allocator {
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, std::size_t) override { cudaFree(p); }
};

struct cuda_malloc_async_allocator final : allocator {
  stream_owner stream;
  memory::cuda::device_async_resource resource;
  void* allocate(std::size_t bytes) override { return resource.allocate(bytes, 256, stream.ref()); }
  void deallocate(void* p, std::size_t bytes) override { resource.deallocate(p, bytes, 256, stream.ref()); }
  void finish() override { cudaStreamSynchronize(stream.get()); }
};

struct pool_allocator final : allocator {
  stream_owner stream;
  memory::cuda::device_resource device;
  memory::cuda::stream_events_hooks events;
  memory::caching_pool pool{device, {}, &events};
  void* allocate(std::size_t bytes) override { return pool.allocate(bytes, 256, stream.ref()); }
  void deallocate(void* p, std::size_t bytes) override { pool.deallocate(p, bytes, 256, stream.ref()); }
  void finish() override { cudaStreamSynchronize(stream.get()); }
};

void BM_device_alloc_free(benchmark::State& state) {
  if (memory::cuda::device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  pool_allocator pool;
  cuda_malloc_allocator plain;
  cuda_malloc_async_allocator async;
  for (allocator* a : {static_cast<allocator*>(&pool), static_cast<allocator*>(&plain), static_cast<allocator*>(&async)}) {
    inferopt::bench::replay(*a, sizes(), window);  // warm: segments, the driver's pool
  }
  double pool_s = 0;
  double plain_s = 0;
  double async_s = 0;
  for (auto _ : state) {
    const double p = inferopt::bench::replay(pool, sizes(), window);
    plain_s += inferopt::bench::replay(plain, sizes(), window);
    async_s += inferopt::bench::replay(async, sizes(), window);
    pool_s += p;
    state.SetIterationTime(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes().size()));
  state.counters["speedup_vs_cudaMalloc"] = plain_s / pool_s;
  state.counters["speedup_vs_cudaMallocAsync"] = async_s / pool_s;
  state.counters["pool_ns_per_pair"] = 1e9 * pool_s / static_cast<double>(state.iterations() * sizes().size());
  state.counters["cudaMalloc_ns_per_pair"] = 1e9 * plain_s / static_cast<double>(state.iterations() * sizes().size());
  state.counters["cudaMallocAsync_ns_per_pair"] =
      1e9 * async_s / static_cast<double>(state.iterations() * sizes().size());
}

}  // namespace

// A fixed number of iterations, not a minimum time: the manual time is the pool's alone, so a
// minimum time would stretch the wall time by the cudaMalloc / pool ratio (100x is the goal),
// past benchmarks/gpu_check.sh's budget. 20 replays are 20480 allocate/free pairs per allocator.
BENCHMARK(BM_device_alloc_free)->Name("BM_device_alloc_free/caching_pool")->UseManualTime()->Iterations(20);

BENCHMARK_MAIN();
