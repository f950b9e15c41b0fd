// Device resources. Every case exits with code 4 (ctest: skipped) when no CUDA device is
// present, so this program passes on machines without a GPU.

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/cuda/device.hpp"
#include "inferopt/memory/cuda/device_async_resource.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"
#include "inferopt/memory/cuda/pinned_host_resource.hpp"
#include "inferopt/memory/cuda/stream_events_hooks.hpp"

using namespace inferopt;

namespace {

void skip_without_device() {
  if (memory::cuda::device_count() == 0) {
    std::cout << "no CUDA device: skipped\n";
    std::exit(4);
  }
}

// Writes `value` into device memory and reads it back through the host.
bool round_trips(void* device_ptr, std::size_t bytes, unsigned char value) {
  std::vector<unsigned char> host(bytes, 0);
  if (cudaMemset(device_ptr, value, bytes) != cudaSuccess) return false;
  if (cudaMemcpy(host.data(), device_ptr, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (unsigned char c : host) {
    if (c != value) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("device resource returns usable device memory aligned to 256 bytes", "[memory][cuda]") {
  skip_without_device();
  memory::cuda::device_resource device;
  void* p = device.allocate(1 << 20);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  CHECK(round_trips(p, 1 << 20, 0x5a));
  device.deallocate(p, 1 << 20);
  memory::cuda::device_resource other;
  CHECK(device.is_equal(other));
}

TEST_CASE("pinned host resource returns host-writable page-locked memory", "[memory][cuda]") {
  skip_without_device();
  memory::cuda::pinned_host_resource pinned;
  auto* p = static_cast<unsigned char*>(pinned.allocate(4096));
  p[0] = 1;
  p[4095] = 2;
  cudaPointerAttributes attributes{};
  REQUIRE(cudaPointerGetAttributes(&attributes, p) == cudaSuccess);
  CHECK(attributes.type == cudaMemoryTypeHost);
  pinned.deallocate(p, 4096);
}

TEST_CASE("device async resource allocates in stream order from its pool", "[memory][cuda]") {
  skip_without_device();
  memory::cuda::device_async_resource async;
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  const memory::stream_ref stream{s};
  void* p = async.allocate(1 << 20, 256, stream);
  CHECK(cudaMemsetAsync(p, 7, 1 << 20, s) == cudaSuccess);
  async.deallocate(p, 1 << 20, 256, stream);
  void* q = async.allocate(1 << 20, 256, stream);
  CHECK(q == p);  // the pool keeps freed memory (high release threshold) and reuses it in order
  async.deallocate(q, 1 << 20, 256, stream);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("device caching pool reuses across streams once the freeing stream's event completed",
          "[memory][cuda]") {
  skip_without_device();
  memory::cuda::device_resource device;
  memory::cuda::stream_events_hooks hooks;
  memory::caching_pool pool(device, {}, &hooks);
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  REQUIRE(cudaStreamCreate(&a) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&b) == cudaSuccess);
  void* first = pool.allocate(1 << 20, 256, {a});
  void* filler = pool.allocate(1 << 20, 256, {a});
  CHECK(cudaMemsetAsync(first, 1, 1 << 20, a) == cudaSuccess);
  pool.deallocate(first, 1 << 20, 256, {a});
  pool.synchronize({a});  // waits for a, then the block is free for every stream
  void* on_b = pool.allocate(1 << 20, 256, {b});
  CHECK(on_b == first);
  CHECK(round_trips(on_b, 1 << 20, 3));
  pool.deallocate(on_b, 1 << 20, 256, {b});
  pool.deallocate(filler, 1 << 20, 256, {a});
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  pool.release();
  CHECK(pool.reserved_bytes() == 0);
  CHECK(cudaStreamDestroy(a) == cudaSuccess);
  CHECK(cudaStreamDestroy(b) == cudaSuccess);
}
