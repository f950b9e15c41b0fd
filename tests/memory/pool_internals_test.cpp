// The caching pool's private building blocks, checked against simple references.

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "inferopt/memory/detail/address_map.hpp"
#include "inferopt/memory/detail/size_class_bins.hpp"

using namespace inferopt::memory::detail;

namespace {

struct test_block {
  std::size_t size = 0;
  test_block* bin_prev = nullptr;
  test_block* bin_next = nullptr;
};

}  // namespace

TEST_CASE("address map agrees with std::unordered_map over random inserts and removals", "[memory][internals]") {
  address_map<test_block> map;
  std::unordered_map<const void*, test_block*> reference;
  std::vector<test_block> values(4096);
  std::mt19937_64 rng(7);
  std::vector<const void*> keys;
  for (int step = 0; step < 200000; ++step) {
    const bool insert = keys.empty() || (keys.size() < 3000 && rng() % 2 == 0);
    if (insert) {
      // 256-byte aligned addresses in a few clustered regions, like a pool's blocks.
      const auto region = std::uintptr_t{1} << (32 + rng() % 4);
      const void* key = reinterpret_cast<const void*>(region + (rng() % (1 << 20)) * 256);
      if (reference.count(key)) continue;
      test_block* v = &values[rng() % values.size()];
      map.insert(key, v);
      reference.emplace(key, v);
      keys.push_back(key);
    } else {
      const std::size_t i = rng() % keys.size();
      const void* key = keys[i];
      keys[i] = keys.back();
      keys.pop_back();
      REQUIRE(map.take(key) == reference.at(key));
      reference.erase(key);
    }
    REQUIRE(map.size() == reference.size());
  }
  CHECK(map.take(reinterpret_cast<const void*>(std::uintptr_t{256})) == nullptr);
  for (const void* key : keys) REQUIRE(map.take(key) == reference.at(key));
  CHECK(map.size() == 0);
}

TEST_CASE("size class bins return the smallest block that fits", "[memory][internals]") {
  size_class_bins<test_block> bins(9);  // 512-byte granules
  std::vector<test_block> blocks;
  for (std::size_t granules : {1, 3, 15, 16, 17, 40, 41, 1000, 4096}) blocks.push_back({granules * 512});
  for (auto& b : blocks) bins.insert(&b);
  CHECK(bins.bytes() == (1 + 3 + 15 + 16 + 17 + 40 + 41 + 1000 + 4096) * 512);
  CHECK(bins.best_fit(512)->size == 512);
  CHECK(bins.best_fit(2 * 512)->size == 3 * 512);
  CHECK(bins.best_fit(16 * 512)->size == 16 * 512);
  CHECK(bins.best_fit(18 * 512)->size == 40 * 512);
  CHECK(bins.best_fit(41 * 512)->size == 41 * 512);  // same class as 40: the list is searched
  CHECK(bins.best_fit(1001 * 512)->size == 4096 * 512);
  CHECK(bins.best_fit(4097 * 512) == nullptr);
  CHECK(bins.largest() == 4096 * 512);
  bins.erase(&blocks.back());
  CHECK(bins.best_fit(1001 * 512) == nullptr);
  CHECK(bins.largest() == 1000 * 512);
  std::size_t visited = 0;
  bins.for_each([&](test_block*) { ++visited; });
  CHECK(visited == blocks.size() - 1);
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) bins.erase(&blocks[i]);
  CHECK(bins.empty());
  CHECK(bins.best_fit(512) == nullptr);
}

TEST_CASE("size class bins agree with a linear best-fit search", "[memory][internals]") {
  size_class_bins<test_block> bins(8);
  std::vector<test_block> blocks(600);
  std::mt19937 rng(3);
  for (auto& b : blocks) {
    b.size = (1 + rng() % 20000) * 256;
    bins.insert(&b);
  }
  for (int probe = 0; probe < 2000; ++probe) {
    const std::size_t want = (1 + rng() % 21000) * 256;
    std::size_t best = 0;
    for (const auto& b : blocks) {
      if (b.size >= want && (best == 0 || b.size < best)) best = b.size;
    }
    test_block* got = bins.best_fit(want);
    if (best == 0) {
      REQUIRE(got == nullptr);
      continue;
    }
    REQUIRE(got != nullptr);
    REQUIRE(got->size >= want);
    // Exact, unless the fitting class holds more blocks than the search looks at: then within
    // one class (1/16 of an octave) of the best.
    REQUIRE(got->size <= best + best / 16 + 256);
  }
}
