#include "inferopt/memory/caching_pool.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "inferopt/memory/host_resource.hpp"
#include "memory/memory_test_util.hpp"

using namespace inferopt;
using memory::caching_pool;
using memory::caching_pool_options;
using memory::stream_ref;
using test::kib;
using test::mib;

namespace {

stream_ref stream(std::uintptr_t id) { return stream_ref{reinterpret_cast<void*>(id)}; }

caching_pool_options no_growth() {
  caching_pool_options o;
  o.geometric_growth = false;
  return o;
}

}  // namespace

TEST_CASE("caching pool packs small requests into one 2 MiB segment, aligned to 256 bytes", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host);
  std::vector<void*> blocks;
  for (std::size_t bytes : {1, 100, 4096, 300 * 1024, 1024 * 1024}) {
    void* p = pool.allocate(bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % memory::default_alignment == 0);
    blocks.push_back(p);
  }
  CHECK(pool.segment_count() == 1);
  CHECK(pool.reserved_bytes() == 2 * mib);
  CHECK(pool.allocated_bytes() == 512 + 512 + 4096 + 300 * kib + mib);
  for (void* p : blocks) pool.deallocate(p, 1);
  CHECK(pool.allocated_bytes() == 0);
}

TEST_CASE("caching pool rounds large requests up to 2 MiB segments and keeps them apart from small ones",
          "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host, no_growth());
  void* large = pool.allocate(3 * mib);
  CHECK(pool.reserved_bytes() == 4 * mib);
  void* small = pool.allocate(64);
  // The large segment's 1 MiB rest is not used for a small request.
  CHECK(pool.segment_count() == 2);
  CHECK(pool.reserved_bytes() == 6 * mib);
  pool.deallocate(large, 3 * mib);
  pool.deallocate(small, 64);
}

TEST_CASE("caching pool does not split off rests below the minimum remainder", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host, no_growth());
  SECTION("large pool: a rest under 1 MiB stays with the block") {
    void* p = pool.allocate(mib + 512 * kib + 1);  // 1.5 MiB + 1 byte in a 2 MiB segment
    CHECK(pool.allocated_bytes() == 2 * mib);
    CHECK(pool.free_space().free_bytes == 0);
    pool.deallocate(p, 1);
  }
  SECTION("large pool: a rest of 1 MiB or more is split off") {
    void* p = pool.allocate(3 * mib);
    CHECK(pool.allocated_bytes() == 3 * mib);
    CHECK(pool.free_space().free_bytes == mib);
    pool.deallocate(p, 1);
  }
}

TEST_CASE("caching pool reuses a freed block at once on the same stream with best fit", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host);
  void* a = pool.allocate(64 * kib, 256, stream(1));
  void* gap = pool.allocate(64, 256, stream(1));  // keeps a and b from merging when freed
  void* b = pool.allocate(16 * kib, 256, stream(1));
  void* keep = pool.allocate(64, 256, stream(1));  // keeps b from merging with the segment's rest
  pool.deallocate(a, 64 * kib, 256, stream(1));
  pool.deallocate(b, 16 * kib, 256, stream(1));
  // 16 KiB fits both freed blocks and the rest; best fit takes the smallest.
  CHECK(pool.allocate(16 * kib, 256, stream(1)) == b);
  CHECK(pool.allocate(64 * kib, 256, stream(1)) == a);
  CHECK(pool.segment_count() == 1);
  pool.deallocate(gap, 64, 256, stream(1));
  pool.deallocate(keep, 64, 256, stream(1));
}

TEST_CASE("caching pool gives a block freed on one stream to another only after synchronize",
          "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host);
  // Fill the small segment so that the freed block is its only free memory.
  void* a = pool.allocate(mib, 256, stream(1));
  void* filler = pool.allocate(mib, 256, stream(1));
  pool.deallocate(a, mib, 256, stream(1));

  void* b1 = pool.allocate(mib, 256, stream(2));
  void* b2 = pool.allocate(mib, 256, stream(2));
  CHECK(b1 != a);  // stream 1 may still be using a
  CHECK(b2 != a);
  CHECK(pool.segment_count() == 2);

  pool.synchronize(stream(1));
  void* c = pool.allocate(mib, 256, stream(3));
  CHECK(c == a);
  CHECK(pool.segment_count() == 2);
  for (void* p : {filler, b1, b2, c}) pool.deallocate(p, mib, 256, stream(2));
}

TEST_CASE("caching pool with event hooks reuses across streams once the free's event completed",
          "[memory][caching_pool]") {
  memory::host_resource host;
  test::manual_events events;
  caching_pool pool(host, {}, &events);
  void* a = pool.allocate(mib, 256, stream(1));
  void* filler = pool.allocate(mib, 256, stream(1));
  pool.deallocate(a, mib, 256, stream(1));

  void* b1 = pool.allocate(mib, 256, stream(2));
  void* b2 = pool.allocate(mib, 256, stream(2));
  CHECK(b1 != a);  // the event recorded at a's free has not completed
  CHECK(b2 != a);
  events.complete_all();
  void* b3 = pool.allocate(mib, 256, stream(2));
  CHECK(b3 == a);
  CHECK(pool.segment_count() == 2);

  SECTION("synchronize waits through the hooks") {
    pool.synchronize(stream(1));
    CHECK(events.synchronized == 1);
  }
  for (void* p : {filler, b1, b2, b3}) pool.deallocate(p, mib, 256, stream(2));
}

TEST_CASE("caching pool keeps the later free's event when it merges two blocks of one stream",
          "[memory][caching_pool]") {
  memory::host_resource host;
  test::manual_events events;
  caching_pool pool(host, {}, &events);
  void* a = pool.allocate(768 * kib, 256, stream(1));
  void* b = pool.allocate(768 * kib, 256, stream(1));
  void* c = pool.allocate(512 * kib, 256, stream(1));
  REQUIRE(pool.segment_count() == 1);
  pool.deallocate(a, 768 * kib, 256, stream(1));  // event 1
  pool.deallocate(b, 768 * kib, 256, stream(1));  // event 2
  // Nothing fits on stream 2, so the pool merges a and b (both still owned by stream 1) and grows.
  void* x = pool.allocate(mib, 256, stream(2));
  void* x_rest = pool.allocate(mib, 256, stream(2));  // fills the new segment
  CHECK(pool.segment_count() == 2);
  CHECK(pool.free_space().largest_block == 1536 * kib);
  // Only a's free has completed: the merged block still waits for b's.
  events.complete(1);
  void* y = pool.allocate(mib, 256, stream(2));
  CHECK(y != a);
  void* y_rest = pool.allocate(mib, 256, stream(2));
  events.complete_all();
  void* z = pool.allocate(mib, 256, stream(2));
  CHECK(z == a);
  for (void* p : {x, x_rest, y, y_rest, z}) pool.deallocate(p, mib, 256, stream(2));
  pool.deallocate(c, 512 * kib, 256, stream(1));
}

TEST_CASE("caching pool merges free neighbours and release returns unused segments", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host);
  void* a = pool.allocate(256 * kib);
  void* b = pool.allocate(256 * kib);
  void* c = pool.allocate(256 * kib);
  pool.deallocate(a, 256 * kib);
  pool.deallocate(c, 256 * kib);
  // a alone, and c merged with the segment's rest.
  CHECK(pool.free_space().largest_block == 2 * mib - 512 * kib);
  CHECK(pool.release() == 0);  // b still holds the segment
  pool.deallocate(b, 256 * kib);
  CHECK(pool.free_space().largest_block == 2 * mib);
  CHECK(pool.release() == 2 * mib);
  CHECK(pool.reserved_bytes() == 0);
  CHECK(pool.segment_count() == 0);
}

TEST_CASE("caching pool trim keeps at most the target reserved", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host, no_growth());
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate(2 * mib));
  for (void* p : blocks) pool.deallocate(p, 2 * mib);
  CHECK(pool.reserved_bytes() == 8 * mib);
  CHECK(pool.trim(5 * mib) == 4 * mib);
  CHECK(pool.reserved_bytes() == 4 * mib);
}

TEST_CASE("caching pool grows large segments geometrically", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool pool(host);
  std::vector<void*> blocks;
  blocks.push_back(pool.allocate(2 * mib));
  CHECK(pool.reserved_bytes() == 2 * mib);
  blocks.push_back(pool.allocate(2 * mib));
  CHECK(pool.reserved_bytes() == 4 * mib);
  blocks.push_back(pool.allocate(2 * mib));
  CHECK(pool.reserved_bytes() == 8 * mib);  // the third segment is 4 MiB, half of it cached
  blocks.push_back(pool.allocate(2 * mib));
  CHECK(pool.reserved_bytes() == 8 * mib);
  CHECK(pool.segment_count() == 3);
  for (void* p : blocks) pool.deallocate(p, 2 * mib);
}

TEST_CASE("caching pool backs off to smaller segments when the upstream runs out", "[memory][caching_pool]") {
  test::capped_resource upstream(7 * mib);
  caching_pool pool(upstream);
  void* a = pool.allocate(2 * mib);
  void* b = pool.allocate(2 * mib);
  void* c = pool.allocate(2 * mib);  // wants 4 MiB, upstream has 3 MiB left: retries with 2 MiB
  CHECK(upstream.failures == 1);
  CHECK(pool.reserved_bytes() == 6 * mib);
  CHECK(pool.segment_count() == 3);
  REQUIRE_THROWS_AS(pool.allocate(2 * mib), memory::out_of_memory);
  for (void* p : {a, b, c}) pool.deallocate(p, 2 * mib);
}

TEST_CASE("caching pool frees cached segments and retries when the upstream runs out", "[memory][caching_pool]") {
  test::capped_resource upstream(4 * mib);
  caching_pool pool(upstream);
  void* small = pool.allocate(64);
  pool.deallocate(small, 64);
  CHECK(upstream.live_bytes == 2 * mib);  // the small segment stays cached
  void* large = pool.allocate(3 * mib);   // needs 4 MiB: only after the cache is released
  CHECK(upstream.failures == 1);
  CHECK(pool.reserved_bytes() == 4 * mib);
  CHECK(pool.segment_count() == 1);
  pool.deallocate(large, 3 * mib);
}

TEST_CASE("caching pool refuses to reserve past its maximum size", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool_options options;
  options.max_bytes = 6 * mib;
  caching_pool pool(host, options);
  void* a = pool.allocate(3 * mib);
  void* b = pool.allocate(64);
  CHECK(pool.reserved_bytes() == 6 * mib);
  REQUIRE_THROWS_AS(pool.allocate(2 * mib), memory::out_of_memory);
  pool.deallocate(b, 64);
  void* c = pool.allocate(2 * mib);  // the unused small segment is released to make room
  CHECK(pool.reserved_bytes() == 6 * mib);
  pool.deallocate(a, 3 * mib);
  pool.deallocate(c, 2 * mib);
}

TEST_CASE("caching pool refuses inconsistent options and alignments above 256 bytes", "[memory][caching_pool]") {
  memory::host_resource host;
  caching_pool_options bad;
  bad.block_granularity = 100;
  REQUIRE_THROWS_AS(caching_pool(host, bad), inferopt::error);
  caching_pool pool(host);
  REQUIRE_THROWS_AS(pool.allocate(64, 4096), inferopt::error);
}

TEST_CASE("caching pool keeps blocks intact under concurrent allocation from four threads",
          "[memory][caching_pool][threads]") {
  memory::host_resource host;
  caching_pool pool(host);
  constexpr int threads = 4;
  constexpr int steps = 3000;
  std::vector<int> corrupted(threads, 0);
  auto worker = [&](int t) {
    std::mt19937 rng(1234 + t);
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_int_distribution<std::size_t> small(1, 64 * kib);
    std::uniform_int_distribution<std::size_t> large(mib, 5 * mib);
    struct live {
      unsigned char* p;
      std::size_t bytes;
      unsigned char pattern;
    };
    std::vector<live> mine;
    const stream_ref s = stream(static_cast<std::uintptr_t>(t + 1));
    auto check_and_free = [&](std::size_t i) {
      const live l = mine[i];
      for (std::size_t k = 0; k < l.bytes; k += 61) corrupted[t] += l.p[k] != l.pattern;
      corrupted[t] += l.p[l.bytes - 1] != l.pattern;
      pool.deallocate(l.p, l.bytes, 256, s);
      mine[i] = mine.back();
      mine.pop_back();
    };
    for (int i = 0; i < steps; ++i) {
      if (!mine.empty() && (mine.size() > 40 || kind(rng) < 4)) {
        check_and_free(std::uniform_int_distribution<std::size_t>(0, mine.size() - 1)(rng));
        continue;
      }
      const std::size_t bytes = kind(rng) == 0 ? large(rng) : small(rng);
      auto* p = static_cast<unsigned char*>(pool.allocate(bytes, 256, s));
      const auto pattern = static_cast<unsigned char>(t * 50 + i);
      std::memset(p, pattern, bytes);
      mine.push_back({p, bytes, pattern});
      if (i % 500 == 0) pool.synchronize(s);
    }
    while (!mine.empty()) check_and_free(mine.size() - 1);
  };
  std::vector<std::thread> pool_threads;
  for (int t = 0; t < threads; ++t) pool_threads.emplace_back(worker, t);
  for (auto& th : pool_threads) th.join();
  for (int t = 0; t < threads; ++t) CHECK(corrupted[t] == 0);
  CHECK(pool.allocated_bytes() == 0);
  pool.release();
  CHECK(pool.reserved_bytes() == 0);
}
