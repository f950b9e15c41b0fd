#include "inferopt/memory/pmr_adaptor.hpp"

#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "inferopt/memory/statistics_adaptor.hpp"

using namespace inferopt;

TEST_CASE("pmr adaptor lets standard containers allocate from a memory resource", "[memory][pmr_adaptor]") {
  memory::host_resource host;
  memory::statistics_adaptor stats(host);
  {
    memory::pmr_adaptor pmr(stats);
    std::pmr::vector<int> v(&pmr);
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    CHECK(std::accumulate(v.begin(), v.end(), 0) == 999 * 1000 / 2);
    CHECK(stats.statistics().current_allocations == 1);
    CHECK(stats.statistics().total_allocations > 1);
  }
  CHECK(stats.statistics().current_bytes == 0);
}

TEST_CASE("pmr adaptors over the same pool compare equal and over different pools do not", "[memory][pmr_adaptor]") {
  memory::host_resource host;
  memory::caching_pool pool_a(host);
  memory::caching_pool pool_b(host);
  memory::pmr_adaptor a1(pool_a);
  memory::pmr_adaptor a2(pool_a);
  memory::pmr_adaptor b(pool_b);
  CHECK(a1 == a2);
  CHECK_FALSE(a1 == b);
  std::pmr::vector<double> v(100, 1.0, &a1);
  std::pmr::vector<double> w(v, &a2);
  CHECK(w.size() == 100);
}
