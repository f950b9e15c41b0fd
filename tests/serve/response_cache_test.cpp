// serve::response_cache and request_key: hits only for the same model, names, types, shapes
// and bytes (no false hit on 100,000 distinct inputs, nor on forced hash collisions), LRU
// eviction within the byte capacity, the time to live, and concurrent use.
#include "inferopt/serve/response_cache.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace inferopt;
using runtime::tensor;
using runtime::tensor_map;
using serve::request_key;
using serve::response_cache;

namespace {

tensor_map one_input(std::vector<float> values, std::vector<std::int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
  return {{"x", tensor::from_values<float>(shape, values)}};
}

tensor_map outputs_of(float v) { return {{"y", tensor::from_values<float>({2}, {v, -v})}}; }

float first_output(const tensor_map& m) { return m.at("y").data<float>()[0]; }

response_cache make_cache(std::size_t bytes, std::chrono::steady_clock::duration ttl = {}) {
  return response_cache(serve::response_cache_options{bytes, ttl});
}

}  // namespace

TEST_CASE("request keys differ in every part that makes a request", "[serve][cache]") {
  const tensor_map base = one_input({1, 2, 3, 4});
  const request_key k("m", base);
  CHECK(k.matches(k.bytes()));
  CHECK(request_key("m", one_input({1, 2, 3, 4})).hash() == k.hash());
  const std::vector<request_key> others{
      request_key("n", base),                               // model
      request_key("m", one_input({1, 2, 3, 5})),            // a byte
      request_key("m", one_input({1, 2, 3, 4}, {2, 2})),    // shape, same bytes
      request_key("m", {{"z", base.at("x")}}),              // name
      request_key("m", {{"x", tensor::from_values<std::int32_t>({4}, {1, 2, 3, 4})}}),  // type
  };
  for (const request_key& other : others) {
    CHECK(!other.matches(k.bytes()));
    CHECK(!k.matches(other.bytes()));
  }
}

TEST_CASE("response cache answers the same request and no other one", "[serve][cache]") {
  response_cache cache = make_cache(1 << 20);
  const tensor_map a = one_input({1, 2, 3}), b = one_input({1, 2, 4});
  CHECK(!cache.find(request_key("m", a)));
  CHECK(cache.insert(request_key("m", a), outputs_of(7)));
  const auto hit = cache.find(request_key("m", a));
  REQUIRE(hit);
  CHECK(first_output(*hit) == 7.0f);
  CHECK(!cache.find(request_key("m", b)));
  CHECK(!cache.find(request_key("other", a)));
  const serve::response_cache_stats s = cache.stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 3);
  CHECK(s.entries == 1);
}

TEST_CASE("response cache gives no false hit on 100000 distinct random inputs", "[serve][cache]") {
  response_cache cache = make_cache(std::size_t{1} << 30);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<tensor_map> inputs;
  for (int i = 0; i < 100000; ++i) {
    tensor_map in = one_input({value(rng), value(rng), value(rng), static_cast<float>(i)});
    REQUIRE(!cache.find(request_key("m", in)));
    cache.insert(request_key("m", in), outputs_of(static_cast<float>(i)));
    if (i % 997 == 0) inputs.push_back(std::move(in));
  }
  for (const tensor_map& in : inputs) {
    const auto hit = cache.find(request_key("m", in));
    REQUIRE(hit);
    CHECK(first_output(*hit) == in.at("x").data<float>()[3]);
  }
  CHECK(cache.stats().misses == 100000);
}

TEST_CASE("response cache confirms a hash match by its bytes", "[serve][cache]") {
  // With the index cut to 4 bits of the hash, 1000 keys share 16 slots: every lookup meets
  // colliding entries and must pick its own by comparing bytes.
  response_cache cache(serve::response_cache_options{std::size_t{1} << 24, {}, 4});
  for (int i = 0; i < 1000; ++i) cache.insert(request_key("m", one_input({static_cast<float>(i)})), outputs_of(static_cast<float>(i)));
  for (int i = 0; i < 1000; ++i) {
    const auto hit = cache.find(request_key("m", one_input({static_cast<float>(i)})));
    REQUIRE(hit);
    CHECK(first_output(*hit) == static_cast<float>(i));
  }
  CHECK(!cache.find(request_key("m", one_input({1000.0f}))));
  CHECK(cache.stats().entries == 1000);
}

TEST_CASE("response cache evicts the least recently used entries to stay within its bytes", "[serve][cache]") {
  const std::size_t one = response_cache::entry_overhead + request_key("m", one_input({0, 0})).size() +
                          response_cache::tensor_overhead + 1 + 2 * sizeof(float);
  response_cache cache = make_cache(3 * one);
  for (int i = 0; i < 3; ++i) cache.insert(request_key("m", one_input({static_cast<float>(i), 0})), outputs_of(static_cast<float>(i)));
  CHECK(cache.stats().bytes == 3 * one);
  REQUIRE(cache.find(request_key("m", one_input({0, 0}))));  // 0 becomes the most recent
  cache.insert(request_key("m", one_input({3, 0})), outputs_of(3));
  CHECK(cache.find(request_key("m", one_input({0, 0}))));
  CHECK(!cache.find(request_key("m", one_input({1, 0}))));  // the least recent went
  CHECK(cache.find(request_key("m", one_input({2, 0}))));
  CHECK(cache.stats().evictions == 1);
  CHECK(cache.stats().bytes <= 3 * one);
  // Larger than the whole cache: refused, nothing evicted.
  CHECK(!cache.insert(request_key("m", one_input(std::vector<float>(1000, 1.0f))), outputs_of(9)));
  CHECK(cache.stats().too_large == 1);
  CHECK(cache.stats().entries == 3);
}

TEST_CASE("response cache drops entries older than the time to live", "[serve][cache]") {
  using namespace std::chrono_literals;
  response_cache cache = make_cache(1 << 20, 10s);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  const tensor_map in = one_input({5});
  cache.insert(request_key("m", in), outputs_of(5), t0);
  CHECK(cache.find(request_key("m", in), t0 + 9s));
  CHECK(!cache.find(request_key("m", in), t0 + 10s));
  CHECK(cache.stats().expirations == 1);
  CHECK(cache.stats().entries == 0);
  CHECK(cache.stats().bytes == 0);
}

TEST_CASE("response cache hits outlive the entry's eviction", "[serve][cache]") {
  response_cache cache = make_cache(2000);
  const tensor_map in = one_input({1});
  cache.insert(request_key("m", in), outputs_of(1));
  const auto hit = cache.find(request_key("m", in));
  REQUIRE(hit);
  for (int i = 2; i < 20; ++i) cache.insert(request_key("m", one_input({static_cast<float>(i)})), outputs_of(static_cast<float>(i)));
  CHECK(!cache.find(request_key("m", in)));
  CHECK(first_output(*hit) == 1.0f);
}

TEST_CASE("response cache with admission stores a request on its second miss only", "[serve][cache]") {
  response_cache cache(serve::response_cache_options{.capacity_bytes = 1 << 20, .admit_on_second_miss = true, .doorkeeper_size = 4});
  const tensor_map in = one_input({1});
  CHECK(!cache.insert(request_key("m", in), outputs_of(1)));  // first miss: only noted
  CHECK(!cache.find(request_key("m", in)));
  CHECK(cache.insert(request_key("m", in), outputs_of(1)));   // second: stored
  CHECK(cache.find(request_key("m", in)));
  for (int i = 0; i < 100; ++i) CHECK(!cache.insert(request_key("m", one_input({static_cast<float>(i + 10)})), outputs_of(0)));
  const serve::response_cache_stats s = cache.stats();
  CHECK(s.entries == 1);
  CHECK(s.not_admitted == 101);
  // The doorkeeper holds 4 hashes and forgets them when full: a key seen long ago is new again.
  CHECK(!cache.insert(request_key("m", one_input({10})), outputs_of(0)));
}

TEST_CASE("response cache rejects a zero capacity and a negative time to live", "[serve][cache]") {
  CHECK_THROWS_AS(make_cache(0), error);
  CHECK_THROWS_AS(make_cache(100, -std::chrono::seconds(1)), error);
}

TEST_CASE("response cache stays consistent under concurrent lookups and inserts", "[serve][cache]") {
  response_cache cache = make_cache(64 * 1024);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        const float v = static_cast<float>((i * 7 + t) % 200);
        const tensor_map in = one_input({v});
        if (const auto hit = cache.find(request_key("m", in))) {
          if (first_output(*hit) != v) ++wrong;
        } else {
          cache.insert(request_key("m", in), outputs_of(v));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const serve::response_cache_stats s = cache.stats();
  CHECK(wrong == 0);
  CHECK(s.hits + s.misses == 12000);
  CHECK(s.bytes <= 64 * 1024);
}
