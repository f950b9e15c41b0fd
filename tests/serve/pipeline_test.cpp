// serve::pipeline and bounded_queue: items pass every stage in order, a slow stage holds
// back the producer (at most the queues' capacity in flight), a stage's exception reaches
// only its item, and stage times are recorded. Bounded waits, no timing asserts.
#include "inferopt/serve/pipeline.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using namespace inferopt;
using namespace std::chrono_literals;
using serve::pipeline;

TEST_CASE("pipeline runs every item through every stage, in order", "[serve][pipeline]") {
  pipeline<int> p({{"add", [](int& v) { v += 1; }}, {"double", [](int& v) { v *= 2; }}, {"less", [](int& v) { v -= 3; }}}, 2);
  std::vector<std::future<int>> out;
  for (int i = 0; i < 200; ++i) out.push_back(p.submit(i));
  for (int i = 0; i < 200; ++i) {
    REQUIRE(out[static_cast<std::size_t>(i)].wait_for(10s) == std::future_status::ready);
    CHECK(out[static_cast<std::size_t>(i)].get() == (i + 1) * 2 - 3);
  }
  for (std::size_t s = 0; s < p.stage_count(); ++s) CHECK(p.metrics(s).busy_ns.count() == 200);
  CHECK(p.metrics(1).name == "double");
  CHECK(p.predicted_throughput() > 0);
}

TEST_CASE("pipeline holds back a producer faster than its slowest stage", "[serve][pipeline]") {
  constexpr std::size_t capacity = 3;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  pipeline<int> p({{"fast", [](int&) {}}, {"stuck", [gate](int&) { gate.wait(); }}}, capacity);
  std::atomic<int> accepted{0};
  std::vector<std::future<int>> out(50);
  std::thread producer([&] {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = p.submit(static_cast<int>(i));
      ++accepted;
    }
  });
  // Each stage's queue, the fast stage's item waiting to be pushed, the stuck stage's item.
  const int bound = static_cast<int>(2 * capacity + 2);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (accepted < bound && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);  // room for a broken queue to let more through
  CHECK(accepted == bound);
  open.set_value();
  producer.join();
  for (std::size_t i = 0; i < out.size(); ++i) {
    REQUIRE(out[i].wait_for(10s) == std::future_status::ready);
    CHECK(out[i].get() == static_cast<int>(i));
  }
}

TEST_CASE("pipeline hands a stage's exception to its item only and skips later stages", "[serve][pipeline]") {
  std::atomic<int> last_stage_runs{0};
  pipeline<int> p({{"check", [](int& v) {
                      if (v == 5) throw error(errc::invalid_argument, "item 5 is bad");
                    }},
                   {"count", [&](int&) { ++last_stage_runs; }}});
  std::vector<std::future<int>> out;
  for (int i = 0; i < 10; ++i) out.push_back(p.submit(i));
  for (int i = 0; i < 10; ++i) {
    REQUIRE(out[static_cast<std::size_t>(i)].wait_for(10s) == std::future_status::ready);
    if (i == 5) {
      CHECK_THROWS_AS(out[5].get(), error);
    } else {
      CHECK(out[static_cast<std::size_t>(i)].get() == i);
    }
  }
  p.close();
  CHECK(last_stage_runs == 9);
}

TEST_CASE("pipeline finishes submitted items on close and refuses new ones", "[serve][pipeline]") {
  pipeline<int> p({{"slow", [](int& v) {
    std::this_thread::sleep_for(1ms);
    v = -v;
  }}});
  std::vector<std::future<int>> out;
  for (int i = 0; i < 5; ++i) out.push_back(p.submit(i));
  p.close();
  for (int i = 0; i < 5; ++i) CHECK(out[static_cast<std::size_t>(i)].get() == -i);
  CHECK_THROWS_AS(p.submit(1), error);
  p.close();
  CHECK_THROWS_AS(pipeline<int>({}), error);
  CHECK_THROWS_AS(pipeline<int>(std::vector<pipeline<int>::stage>{{"none", nullptr}}), error);
  CHECK_THROWS_AS(pipeline<int>({{"a", [](int&) {}}}, 0), error);
}
