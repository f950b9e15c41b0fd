#include "inferopt/memory/host_resource.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

using namespace inferopt;
using memory::host_resource;

TEST_CASE("host resource returns memory aligned as asked", "[memory][host_resource]") {
  host_resource host;
  const std::size_t alignment = GENERATE(std::size_t{8}, 16, 64, 256, 4096);
  CAPTURE(alignment);
  void* p = host.allocate(1000, alignment);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % alignment == 0);
  std::memset(p, 0xab, 1000);
  host.deallocate(p, 1000, alignment);
}

TEST_CASE("host resource aligns to 256 bytes by default and returns null for zero bytes", "[memory][host_resource]") {
  host_resource host;
  void* p = host.allocate(3);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % memory::default_alignment == 0);
  host.deallocate(p, 3);
  CHECK(host.allocate(0) == nullptr);
}

TEST_CASE("host resources are interchangeable and refuse alignments that are not powers of two",
          "[memory][host_resource]") {
  host_resource a;
  host_resource b;
  CHECK(a.is_equal(b));
  void* p = a.allocate(64, 64);
  b.deallocate(p, 64, 64);
  REQUIRE_THROWS_AS(a.allocate(64, 24), inferopt::error);
}

TEST_CASE("host resource maps requests of 2 MiB and more on 2 MiB boundaries", "[memory][host_resource]") {
  host_resource host;
  for (std::size_t bytes : {host_resource::mapped_threshold, 3 * host_resource::mapped_threshold + 100}) {
    CAPTURE(bytes);
    void* p = host.allocate(bytes, 4096);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % host_resource::mapped_threshold == 0);
    std::memset(p, 0x5a, bytes);  // every byte is writable
    host.deallocate(p, bytes, 4096);
  }
  // An alignment above 2 MiB is honoured too.
  void* p = host.allocate(host_resource::mapped_threshold, 8 * host_resource::mapped_threshold);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % (8 * host_resource::mapped_threshold) == 0);
  host.deallocate(p, host_resource::mapped_threshold, 8 * host_resource::mapped_threshold);
}
