#include "inferopt/memory/limiting_adaptor.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "inferopt/memory/host_resource.hpp"
#include "memory/memory_test_util.hpp"

using namespace inferopt;

TEST_CASE("limiting adaptor throws out_of_memory naming the limit once a request would pass it",
          "[memory][limiting_adaptor]") {
  memory::host_resource host;
  memory::limiting_adaptor limited(host, 1000);
  void* a = limited.allocate(600);
  CHECK(limited.used_bytes() == 600);
  try {
    (void)limited.allocate(500);
    FAIL("expected out_of_memory");
  } catch (const memory::out_of_memory& e) {
    CHECK(std::string(e.what()) == "limiting_adaptor: allocating 500 bytes would exceed the limit of 1000 bytes (600 in use)");
  }
  CHECK(limited.used_bytes() == 600);
  void* b = limited.allocate(400);  // exactly at the limit is allowed
  limited.deallocate(a, 600);
  void* c = limited.allocate(600);  // freed bytes count again
  limited.deallocate(b, 400);
  limited.deallocate(c, 600);
  CHECK(limited.used_bytes() == 0);
}

TEST_CASE("limiting adaptor does not count a request the upstream refused", "[memory][limiting_adaptor]") {
  test::capped_resource upstream(100);
  memory::limiting_adaptor limited(upstream, 1000);
  REQUIRE_THROWS_AS(limited.allocate(200), memory::out_of_memory);
  CHECK(limited.used_bytes() == 0);
}
