// serve::batcher: how batches form (max_batch, preferred sizes, max_delay, shape buckets),
// how outputs are split back, priorities, queue timeouts (reject and delay), the queue bounds
// (count and expected wait), invalid requests, draining on stop, concurrent instances, and a
// real session with a symbolic batch dimension. Waits are bounded (a broken batcher fails, it
// does not hang); no speed is asserted (the wait-bound test needs only that a 300 ms sleep
// takes less than 375 ms).
#include "inferopt/serve/batcher.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include "inferopt/ir/graph_builder.hpp"

using namespace inferopt;
using namespace std::chrono_literals;
using runtime::tensor;
using runtime::tensor_map;
using serve::batcher;
using serve::batcher_options;
using serve::inference_request;

namespace {

constexpr auto patience = 10s;  // how long a test waits for a future that should complete

/// A request of `rows` rows of `width` floats, row r holding first + r everywhere.
inference_request rows_of(std::int64_t rows, float first, std::int64_t width = 2, int priority = 0,
                          std::chrono::microseconds timeout = {}) {
  std::vector<float> v;
  for (std::int64_t r = 0; r < rows; ++r) v.insert(v.end(), static_cast<std::size_t>(width), first + static_cast<float>(r));
  return inference_request{{{"x", tensor::from_values<float>({rows, width}, v)}}, priority, timeout};
}

/// relu(x W) for x of [batch, 4], batch symbolic.
ir::model linear_relu_model() {
  ir::model m = ir::make_model("linear");
  ir::graph_builder gb(m.graph(), 5);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{"batch"}, ir::dim{4}});
  std::vector<float> w(12);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i) - 1.0f;
  gb.output(gb.op("Relu", {gb.op("MatMul", {x, gb.constant("w", {4, 3}, w)})}));
  return m;
}

/// A runner computing y = 2 x and a non-batched output, and noting each batch's rows.
struct doubling_runner {
  std::shared_ptr<std::vector<std::int64_t>> batches = std::make_shared<std::vector<std::int64_t>>();
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();

  tensor_map operator()(const tensor_map& in) const {
    const tensor& x = in.at("x");
    std::vector<float> y(static_cast<std::size_t>(x.element_count()));
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = 2 * x.data<float>()[i];
    {
      const std::lock_guard lock(*mutex);
      batches->push_back(x.rank() == 0 ? 1 : x.dim(0));
    }
    return {{"y", tensor::from_values<float>(x.shape(), y)}, {"version", tensor::from_values<std::int64_t>({1}, {7})}};
  }
  [[nodiscard]] std::vector<std::int64_t> seen() const {
    const std::lock_guard lock(*mutex);
    return *batches;
  }
};

/// A runner that waits for `gate` before each batch, and records the first input value.
struct gated_runner {
  std::shared_future<void> gate;
  std::shared_ptr<std::vector<float>> order = std::make_shared<std::vector<float>>();
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();

  tensor_map operator()(const tensor_map& in) const {
    gate.wait();
    const std::lock_guard lock(*mutex);
    order->push_back(in.at("x").data<float>()[0]);
    return {{"y", in.at("x")}};
  }
};

tensor_map get(std::future<tensor_map>& f) {
  REQUIRE(f.wait_for(patience) == std::future_status::ready);
  return f.get();
}

void check_doubled(const tensor_map& out, std::int64_t rows, float first) {
  const tensor& y = out.at("y");
  REQUIRE(y.shape() == runtime::shape_t{rows, 2});
  for (std::int64_t r = 0; r < rows; ++r) {
    CHECK(y.data<float>()[r * 2] == 2 * (first + static_cast<float>(r)));
    CHECK(y.data<float>()[r * 2 + 1] == 2 * (first + static_cast<float>(r)));
  }
  CHECK(out.at("version").data<std::int64_t>()[0] == 7);
}

/// Blocks the batcher's only instance with one request until the returned promise is set.
struct blocked_instance {
  std::promise<void> release;
  gated_runner runner{release.get_future().share()};
};

/// A runner whose first batch sleeps `first` (so the batcher learns a batch time) and whose
/// later batches wait for `release`.
struct timed_then_gated {
  std::chrono::milliseconds first;
  std::shared_ptr<std::promise<void>> release = std::make_shared<std::promise<void>>();
  std::shared_future<void> gate = release->get_future().share();
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

  tensor_map operator()(const tensor_map& in) const {
    if ((*calls)++ == 0) {
      std::this_thread::sleep_for(first);
    } else {
      gate.wait();
    }
    return {{"y", in.at("x")}};
  }

  /// Runs the sleeping batch and returns the batch time the batcher noted.
  std::chrono::microseconds time_one_batch(batcher& b) const {
    auto warm = b.submit(rows_of(1, 0));
    get(warm);
    while (b.recent_batch_time() == std::chrono::microseconds(0)) std::this_thread::yield();  // noted after the promise
    return b.recent_batch_time();
  }

  /// Starts a batch that holds the instance until release is set.
  std::future<tensor_map> block(batcher& b) const {
    auto busy = b.submit(rows_of(1, 1));
    while (b.pending() != 0) std::this_thread::yield();
    return busy;
  }
};

}  // namespace

TEST_CASE("batcher runs requests that fill max_batch as one batch and splits the outputs by rows", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 7, .max_delay = 10s}, {runner});
  std::vector<std::future<tensor_map>> futures;
  const std::vector<std::int64_t> rows{1, 2, 1, 3};
  float first = 0;
  for (const std::int64_t r : rows) futures.push_back(b.submit(rows_of(r, first += 10)));
  first = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) check_doubled(get(futures[i]), rows[i], first += 10);
  CHECK(runner.seen() == std::vector<std::int64_t>{7});
  CHECK(b.metrics().batch_rows.count_at_most(7) == 1);
}

TEST_CASE("batcher forms a batch at a preferred size without waiting for the delay", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 16, .preferred_batch = {4, 8}, .max_delay = 60s}, {runner});
  std::vector<std::future<tensor_map>> futures;
  for (int i = 0; i < 4; ++i) futures.push_back(b.submit(rows_of(1, static_cast<float>(i))));
  for (int i = 0; i < 4; ++i) check_doubled(get(futures[static_cast<std::size_t>(i)]), 1, static_cast<float>(i));
  CHECK(runner.seen() == std::vector<std::int64_t>{4});
}

TEST_CASE("batcher runs a partial batch once its oldest request has waited max_delay", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 16, .max_delay = 20ms}, {runner});
  std::vector<std::future<tensor_map>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(b.submit(rows_of(1, static_cast<float>(i))));
  for (int i = 0; i < 3; ++i) check_doubled(get(futures[static_cast<std::size_t>(i)]), 1, static_cast<float>(i));
  CHECK(runner.seen() == std::vector<std::int64_t>{3});
}

TEST_CASE("batcher counts max_delay from when the instance became free, so requests queued behind a batch wait for company",
          "[serve][batcher]") {
  blocked_instance blocked;
  batcher b(batcher_options{.max_batch = 4, .max_delay = 500ms}, {blocked.runner});
  auto busy = b.submit(rows_of(1, 0));
  while (b.pending() != 0) std::this_thread::yield();
  std::vector<std::future<tensor_map>> queued;
  for (int i = 1; i <= 3; ++i) queued.push_back(b.submit(rows_of(1, static_cast<float>(i))));
  std::this_thread::sleep_for(600ms);  // longer than max_delay: counted from arrival, they would go at once
  blocked.release.set_value();
  get(busy);
  queued.push_back(b.submit(rows_of(1, 4)));  // the busy batch's client, back at once: it fills the batch
  for (auto& f : queued) get(f);
  CHECK(b.metrics().batches == 2);
  CHECK(b.metrics().batch_rows.count_at_most(1) == 1);
  CHECK(b.metrics().batch_rows.count_at_most(4) == 2);
}

TEST_CASE("batcher batches only requests with the same names, types and non-batch dims", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 2, .max_delay = 20ms}, {runner});
  auto wide = b.submit(rows_of(1, 1, 3));
  auto narrow = b.submit(rows_of(1, 2, 2));
  CHECK(get(wide).at("y").shape() == runtime::shape_t{1, 3});
  check_doubled(get(narrow), 1, 2);
  CHECK(runner.seen() == std::vector<std::int64_t>{1, 1});
}

TEST_CASE("batcher serves the highest priority first", "[serve][batcher]") {
  blocked_instance blocked;
  batcher b(batcher_options{.max_batch = 1, .priority_levels = 3}, {blocked.runner});
  auto busy = b.submit(rows_of(1, 0));
  while (b.pending() != 0) std::this_thread::yield();  // the instance took it and waits
  auto low = b.submit(rows_of(1, 3, 2, 3));
  auto lowest = b.submit(rows_of(1, 4, 2, 0));  // 0: the lowest level
  auto high = b.submit(rows_of(1, 1, 2, 1));
  auto middle = b.submit(rows_of(1, 2, 2, 2));
  blocked.release.set_value();
  for (auto* f : {&busy, &low, &lowest, &high, &middle}) get(*f);
  CHECK(*blocked.runner.order == std::vector<float>{0, 1, 2, 3, 4});
}

TEST_CASE("batcher rejects a request whose queue timeout passed", "[serve][batcher]") {
  blocked_instance blocked;
  batcher b(batcher_options{.max_batch = 1, .queue_timeout = 60s}, {blocked.runner});
  auto busy = b.submit(rows_of(1, 0));
  auto late = b.submit(rows_of(1, 1, 2, 0, 5ms));  // lowers the default
  auto patient = b.submit(rows_of(1, 2));
  std::this_thread::sleep_for(30ms);
  blocked.release.set_value();
  get(busy);
  REQUIRE(late.wait_for(patience) == std::future_status::ready);
  try {
    late.get();
    FAIL("the late request ran");
  } catch (const serve::rejection& e) {
    CHECK(e.reason() == serve::rejection_reason::timed_out);
  }
  get(patient);
  CHECK(b.metrics().timed_out == 1);
}

TEST_CASE("batcher delays a timed-out request behind the others under timeout_action::delay", "[serve][batcher]") {
  blocked_instance blocked;
  batcher b(batcher_options{.max_batch = 1, .on_timeout = serve::timeout_action::delay}, {blocked.runner});
  auto busy = b.submit(rows_of(1, 0));
  while (b.pending() != 0) std::this_thread::yield();
  auto late = b.submit(rows_of(1, 1, 2, 0, 5ms));
  auto next = b.submit(rows_of(1, 2));
  std::this_thread::sleep_for(30ms);
  blocked.release.set_value();
  for (auto* f : {&busy, &late, &next}) get(*f);
  CHECK(*blocked.runner.order == std::vector<float>{0, 2, 1});
}

TEST_CASE("batcher rejects at once when max_queue requests wait", "[serve][batcher]") {
  blocked_instance blocked;
  batcher b(batcher_options{.max_batch = 1, .max_queue = 2}, {blocked.runner});
  auto busy = b.submit(rows_of(1, 0));
  while (b.pending() != 0) std::this_thread::yield();
  auto first = b.submit(rows_of(1, 1));
  auto second = b.submit(rows_of(1, 2));
  try {
    (void)b.submit(rows_of(1, 3));
    FAIL("a third request was queued");
  } catch (const serve::rejection& e) {
    CHECK(e.reason() == serve::rejection_reason::queue_full);
  }
  blocked.release.set_value();
  for (auto* f : {&busy, &first, &second}) get(*f);
  CHECK(b.metrics().rejected_full == 1);
}

TEST_CASE("batcher refuses at once a request that would wait longer than max_queue_wait, one batch time per round queued ahead",
          "[serve][batcher]") {
  // The first batch sleeps 300 ms, so the batch time is about 300 ms; the bound is 750 ms.
  // With the instance then blocked on a batch that just started, a request behind k queued
  // rows waits about (k / 4 + 1) batch times: rows 0-7 come under the bound, row 8 does not.
  timed_then_gated runner{300ms};
  batcher b(batcher_options{.max_batch = 4, .max_queue_wait = 750ms}, {runner});
  CHECK(b.expected_wait() == 0us);  // nothing is known of the model's speed yet
  const auto batch_time = runner.time_one_batch(b);
  CHECK(batch_time >= 300ms);
  CHECK(b.expected_wait() == 0us);  // idle and nothing queued

  auto busy = runner.block(b);
  std::vector<std::future<tensor_map>> accepted;
  for (int k = 0; k < 8; ++k) {
    const auto wait = b.expected_wait();
    CHECK(wait >= (k / 4) * batch_time);
    CHECK(wait <= (k / 4 + 1) * batch_time);
    accepted.push_back(b.submit(rows_of(1, static_cast<float>(10 + k))));
  }
  CHECK(b.expected_wait() > 750ms);
  try {
    (void)b.submit(rows_of(1, 99));
    FAIL("a request beyond the wait bound was queued");
  } catch (const serve::rejection& e) {
    CHECK(e.reason() == serve::rejection_reason::expected_wait);
  }
  CHECK_THROWS_AS(b.admit(), serve::rejection);
  runner.release->set_value();
  get(busy);
  for (auto& f : accepted) get(f);
  CHECK(b.metrics().rejected_wait == 2);
  CHECK(b.metrics().rejected_full == 0);
  b.admit();  // drained: admitted again
}

TEST_CASE("batcher takes a request that fits in the next batch even when the wait bound is below one batch time", "[serve][batcher]") {
  timed_then_gated runner{50ms};
  batcher b(batcher_options{.max_batch = 2, .max_queue_wait = 1ms}, {runner});
  (void)runner.time_one_batch(b);
  auto busy = runner.block(b);
  CHECK(b.expected_wait() > 1ms);  // the running batch alone takes longer than the bound
  auto first = b.submit(rows_of(1, 2));
  auto second = b.submit(rows_of(1, 3));  // the next batch: 2 rows
  CHECK_THROWS_AS(b.submit(rows_of(1, 4)), serve::rejection);  // a round behind it
  runner.release->set_value();
  for (auto* f : {&busy, &first, &second}) get(*f);
  CHECK(b.metrics().rejected_wait == 1);
}

TEST_CASE("batcher pads a batch with zero rows to the next padded size and drops their outputs", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 8, .max_delay = 20ms, .padded_sizes = serve::powers_of_two_up_to(8)}, {runner});
  CHECK(b.options().padded_sizes == std::vector<std::int64_t>{1, 2, 4, 8});
  std::vector<std::future<tensor_map>> futures;
  futures.push_back(b.submit(rows_of(2, 10)));
  futures.push_back(b.submit(rows_of(1, 20)));  // 3 rows: run as 4
  check_doubled(get(futures[0]), 2, 10);
  check_doubled(get(futures[1]), 1, 20);
  auto alone = b.submit(rows_of(3, 30));  // one request of 3 rows: padded too
  check_doubled(get(alone), 3, 30);
  CHECK(runner.seen() == std::vector<std::int64_t>{4, 4});
  CHECK(b.metrics().padding_rows == 2);
  CHECK(b.metrics().batch_rows.sum() == 6);  // the requests' rows, not the padding
  CHECK_THROWS_AS(batcher(batcher_options{.max_batch = 8, .padded_sizes = {1, 4}}, {runner}), error);  // 8 must be there
  CHECK_THROWS_AS(batcher(batcher_options{.max_batch = 8, .padded_sizes = {16}}, {runner}), error);
}

TEST_CASE("batcher refuses requests it cannot batch and options it cannot honour", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 4, .priority_levels = 2}, {runner});
  CHECK_THROWS_AS(b.submit(inference_request{}), error);
  CHECK_THROWS_AS(b.submit(rows_of(5, 0)), error);
  CHECK_THROWS_AS(b.submit(rows_of(1, 0, 2, 3)), error);
  CHECK_THROWS_AS(b.submit(rows_of(1, 0, 2, -1)), error);
  tensor_map uneven{{"a", tensor::from_values<float>({2, 1}, {1, 2})}, {"b", tensor::from_values<float>({1, 1}, {1})}};
  CHECK_THROWS_AS(b.submit(inference_request{uneven}), error);
  CHECK_THROWS_AS(b.submit(inference_request{{{"s", tensor::from_values<float>({}, {1})}}}), error);
  CHECK_THROWS_AS(batcher(batcher_options{}, {}), error);
  CHECK_THROWS_AS(batcher(batcher_options{.max_batch = 0}, {runner}), error);
  CHECK_THROWS_AS(batcher(batcher_options{.max_batch = 4, .preferred_batch = {8}}, {runner}), error);
  CHECK_THROWS_AS(batcher(batcher_options{.priority_levels = 0}, {runner}), error);
}

TEST_CASE("batcher with max_batch 1 runs each request whole, whatever its shapes", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 1}, {runner});
  auto f = b.submit(inference_request{{{"x", tensor::from_values<float>({3, 2}, {1, 1, 2, 2, 3, 3})}}});
  check_doubled(get(f), 3, 1);
  auto scalar = b.submit(inference_request{{{"x", tensor::from_values<float>({}, {4})}}});
  CHECK(get(scalar).at("y").data<float>()[0] == 8);
}

TEST_CASE("batcher runs every queued request when stopped, then refuses new ones", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 64, .max_delay = 60s}, {runner});
  std::vector<std::future<tensor_map>> futures;
  for (int i = 0; i < 10; ++i) futures.push_back(b.submit(rows_of(1, static_cast<float>(i))));
  b.stop();
  for (int i = 0; i < 10; ++i) check_doubled(get(futures[static_cast<std::size_t>(i)]), 1, static_cast<float>(i));
  try {
    (void)b.submit(rows_of(1, 0));
    FAIL("a request was accepted after stop");
  } catch (const serve::rejection& e) {
    CHECK(e.reason() == serve::rejection_reason::shutting_down);
  }
  b.stop();  // idempotent
}

TEST_CASE("batcher hands a runner's exception to every request of the batch", "[serve][batcher]") {
  const serve::batch_runner failing = [](const tensor_map&) -> tensor_map { throw error(errc::internal, "the model failed"); };
  batcher b(batcher_options{.max_batch = 2, .max_delay = 60s}, {failing});
  auto a = b.submit(rows_of(1, 0));
  auto c = b.submit(rows_of(1, 1));
  for (auto* f : {&a, &c}) {
    REQUIRE(f->wait_for(patience) == std::future_status::ready);
    CHECK_THROWS_AS(f->get(), error);
  }
  CHECK(b.metrics().failed == 2);
}

TEST_CASE("batcher runs batches on several instances at once", "[serve][batcher]") {
  std::atomic<int> running{0}, most{0};
  std::promise<void> both_started;
  std::atomic<bool> signalled{false};
  const auto runner = [&](const tensor_map& in) -> tensor_map {
    const int now = ++running;
    most = std::max(most.load(), now);
    if (now == 2 && !signalled.exchange(true)) both_started.set_value();
    std::this_thread::sleep_for(20ms);
    --running;
    return {{"y", in.at("x")}};
  };
  batcher b(batcher_options{.max_batch = 1}, {runner, runner});
  auto f1 = b.submit(rows_of(1, 0));
  auto f2 = b.submit(rows_of(1, 1));
  get(f1);
  get(f2);
  CHECK(most == 2);
}

TEST_CASE("batcher gives each of many concurrent clients its own rows", "[serve][batcher]") {
  doubling_runner runner;
  batcher b(batcher_options{.max_batch = 8, .preferred_batch = {4}, .max_delay = 1ms}, {runner, runner});
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c));
      for (int i = 0; i < 150; ++i) {
        const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 3);
        const float first = static_cast<float>(c * 1000 + i * 4);
        auto f = b.submit(rows_of(rows, first));
        if (f.wait_for(patience) != std::future_status::ready) {
          ++wrong;
          continue;
        }
        const tensor_map out = f.get();
        const tensor& y = out.at("y");
        if (y.dim(0) != rows) ++wrong;
        for (std::int64_t r = 0; r < rows; ++r) wrong += y.data<float>()[r * 2] != 2 * (first + static_cast<float>(r));
      }
    });
  }
  for (std::thread& t : clients) t.join();
  CHECK(wrong == 0);
  std::int64_t total = 0;
  for (const std::int64_t rows : runner.seen()) {
    CHECK(rows <= 8);
    total += rows;
  }
  CHECK(b.metrics().requests == 900);
  CHECK(static_cast<std::uint64_t>(total) == b.metrics().batch_rows.sum());
}

TEST_CASE("batcher over a session with a symbolic batch equals running each request alone", "[serve][batcher]") {
  const ir::model m = linear_relu_model();
  runtime::session session(m, runtime::session_options{.threads = 1});
  const std::string output = session.outputs().front().name;
  batcher b(batcher_options{.max_batch = 16, .max_delay = 5ms},
            {[&session](const tensor_map& in) { return session.run(in); }});
  std::vector<tensor_map> requests;
  std::vector<std::future<tensor_map>> futures;
  for (int i = 0; i < 16; ++i) {
    std::vector<float> v(8);
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<float>(i * 8 + static_cast<int>(k)));
    requests.push_back({{"x", tensor::from_values<float>({2, 4}, v)}});
    futures.push_back(b.submit(inference_request{requests.back()}));
  }
  runtime::session alone(m, runtime::session_options{.threads = 1});
  for (std::size_t i = 0; i < futures.size(); ++i) {
    const tensor_map got = get(futures[i]);
    CHECK(got.at(output).to_float() == alone.run(requests[i]).at(output).to_float());
  }
  CHECK(b.metrics().batches < 16);
}

TEST_CASE("batcher's client may read and drop an output while the instance runs the next batch into its buffer",
          "[serve][batcher]") {
  // The session writes its next output into the buffer of one its caller dropped. Nothing but
  // the drop orders the client's reads before that write (the runner waits on a relaxed flag),
  // so ThreadSanitizer reports a race unless the session's "no one else holds it" check is an
  // acquire.
  const ir::model m = linear_relu_model();
  runtime::session session(m, runtime::session_options{.threads = 1});
  runtime::session alone(m, runtime::session_options{.threads = 1});
  std::atomic<bool> dropped{false};
  std::atomic<int> runs{0};
  batcher b(batcher_options{.max_batch = 1}, {[&](const tensor_map& in) {
              if (runs.fetch_add(1, std::memory_order_relaxed) == 1)
                while (!dropped.load(std::memory_order_relaxed)) std::this_thread::yield();
              return session.run(in);
            }});
  // Released before the batcher stops, so a failed REQUIRE below cannot leave its runner waiting.
  const std::unique_ptr<std::atomic<bool>, void (*)(std::atomic<bool>*)> release_runner(
      &dropped, [](std::atomic<bool>* flag) { flag->store(true, std::memory_order_relaxed); });
  const tensor_map first{{"x", tensor::from_values<float>({1, 4}, {1, 2, 3, 4})}};
  const tensor_map second{{"x", tensor::from_values<float>({1, 4}, {-4, 3, -2, 1})}};
  auto f1 = b.submit(inference_request{first});
  auto f2 = b.submit(inference_request{second});
  REQUIRE(f1.wait_for(patience) == std::future_status::ready);
  {
    const tensor_map out = f1.get();
    CHECK(out.begin()->second.to_float() == alone.run(first).begin()->second.to_float());
  }
  dropped.store(true, std::memory_order_relaxed);
  REQUIRE(f2.wait_for(patience) == std::future_status::ready);
  CHECK(f2.get().begin()->second.to_float() == alone.run(second).begin()->second.to_float());
}
