#include "inferopt/memory/tracking_adaptor.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "inferopt/memory/host_resource.hpp"

using namespace inferopt;

TEST_CASE("tracking adaptor lists leaked blocks by size and count", "[memory][tracking_adaptor]") {
  memory::host_resource host;
  memory::tracking_adaptor tracker(host, nullptr);
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(tracker.allocate(4096));
  blocks.push_back(tracker.allocate(100));
  void* freed = tracker.allocate(7);
  tracker.deallocate(freed, 7);

  const memory::leak_report r = tracker.report();
  CHECK(r.count == 4);
  CHECK(r.bytes == 3 * 4096 + 100);
  CHECK(r.by_size.at(4096) == 3);
  CHECK(r.by_size.at(100) == 1);
  CHECK_FALSE(r.by_size.contains(7));
  CHECK(r.to_string() ==
        "leaked 3 blocks of 4096 bytes\n"
        "leaked 1 block of 100 bytes\n"
        "total: 4 leaked, 12388 bytes\n");

  for (int i = 0; i < 3; ++i) tracker.deallocate(blocks[i], 4096);
  tracker.deallocate(blocks[3], 100);
  CHECK(tracker.report().empty());
}

TEST_CASE("tracking adaptor reports leaks to its sink at destruction and stays silent without them",
          "[memory][tracking_adaptor]") {
  memory::host_resource host;
  std::vector<memory::leak_report> reports;
  void* leaked = nullptr;
  {
    memory::tracking_adaptor tracker(host, [&](const memory::leak_report& r) { reports.push_back(r); });
    leaked = tracker.allocate(256);
  }
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].count == 1);
  CHECK(reports[0].by_size.at(256) == 1);
  host.deallocate(leaked, 256);  // the upstream still owns it

  {
    memory::tracking_adaptor tracker(host, [&](const memory::leak_report& r) { reports.push_back(r); });
    tracker.deallocate(tracker.allocate(64), 64);
  }
  CHECK(reports.size() == 1);
}
