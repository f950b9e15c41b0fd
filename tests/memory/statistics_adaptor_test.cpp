#include "inferopt/memory/statistics_adaptor.hpp"

#include <catch2/catch.hpp>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "memory/memory_test_util.hpp"

using namespace inferopt;
using test::kib;
using test::mib;

TEST_CASE("statistics adaptor counts current and peak bytes and allocations", "[memory][statistics_adaptor]") {
  memory::host_resource host;
  memory::statistics_adaptor stats(host);
  void* a = stats.allocate(100);
  void* b = stats.allocate(300);
  stats.deallocate(a, 100);
  void* c = stats.allocate(50);
  const memory::allocation_statistics s = stats.statistics();
  CHECK(s.current_bytes == 350);
  CHECK(s.peak_bytes == 400);
  CHECK(s.total_bytes == 450);
  CHECK(s.current_allocations == 2);
  CHECK(s.peak_allocations == 2);
  CHECK(s.total_allocations == 3);
  stats.deallocate(b, 300);
  stats.deallocate(c, 50);
  CHECK(stats.statistics().current_bytes == 0);
  CHECK(stats.statistics().peak_bytes == 400);
}

TEST_CASE("statistics adaptor reports the fragmentation of the pool it wraps", "[memory][statistics_adaptor]") {
  memory::host_resource host;
  memory::caching_pool pool(host);
  memory::statistics_adaptor stats(pool);
  CHECK(stats.fragmentation() == 0.0);  // nothing cached

  void* a = stats.allocate(512 * kib);
  CHECK(stats.fragmentation() == 0.0);  // the free space is one block (the segment's rest)
  void* b = stats.allocate(512 * kib);
  void* c = stats.allocate(512 * kib);
  stats.deallocate(a, 512 * kib);
  stats.deallocate(c, 512 * kib);
  // Free: a (512 KiB) and c merged with the rest (1 MiB); largest 1 MiB of 1.5 MiB.
  CHECK(stats.fragmentation() == Approx(1.0 - 1.0 / 1.5));
  stats.deallocate(b, 512 * kib);
  CHECK(stats.fragmentation() == 0.0);
  CHECK(stats.free_space().free_bytes == 2 * mib);
}
