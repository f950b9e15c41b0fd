// The session's static memory plan: traced once, then every intermediate tensor lives at its
// planned offset in one arena. Checked with test kernels whose outputs are easy to predict.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "runtime/test_kernels.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

/// y = x as a flat view sharing x's storage, as Reshape does.
class flat_view final : public runtime::kernel {
 public:
  void compute(runtime::kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    ctx.set_output(0, x.reshaped({x.element_count()}));
  }
};

/// y = x[0] copies of 1.0: the output size depends on the input's values, not its shape.
class ones_like_value final : public runtime::kernel {
 public:
  void compute(runtime::kernel_context& ctx) override {
    const auto n = static_cast<std::int64_t>(ctx.input(0).data<float>()[0]);
    tensor& y = ctx.allocate_output(0, ir::data_type::float32, {n});
    for (std::int64_t k = 0; k < n; ++k) y.mutable_data<float>()[k] = 1.0f;
  }
};

/// y = sum of x, shape [1].
class total final : public runtime::kernel {
 public:
  void compute(runtime::kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    float sum = 0;
    for (float v : x.values<float>()) sum += v;
    ctx.allocate_output(0, ir::data_type::float32, {1}).mutable_data<float>()[0] = sum;
  }
};

/// y = x + 1 computed in scratch memory, which is first filled with junk: scratch placed
/// over a tensor still live would corrupt it. Asks for x's bytes times `x[0]` when
/// `sized_by_value`, else x's bytes.
class add_one_via_scratch final : public runtime::kernel {
 public:
  explicit add_one_via_scratch(bool sized_by_value) : sized_by_value_(sized_by_value) {}
  void compute(runtime::kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const auto n = static_cast<std::size_t>(x.element_count());
    const std::size_t times = sized_by_value_ ? static_cast<std::size_t>(x.data<float>()[0]) : 1;
    auto* work = reinterpret_cast<float*>(ctx.scratch(n * times * sizeof(float)));
    REQUIRE(reinterpret_cast<std::uintptr_t>(work) % 64 == 0);
    std::fill(work, work + n * times, -1e30f);
    for (std::size_t k = 0; k < n; ++k) work[(times - 1) * n + k] = x.data<float>()[k] + 1.0f;
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    std::copy(work + (times - 1) * n, work + times * n, y.mutable_data<float>());
  }

 private:
  bool sized_by_value_;
};

const runtime::kernel_registry& test_kernels() {
  static const runtime::kernel_registry r = [] {
    runtime::kernel_registry k;
    k.add("", "AddOne", [](const runtime::kernel_build_info&) { return std::make_unique<test::add_one>(); });
    k.add("", "Add", [](const runtime::kernel_build_info&) { return std::make_unique<test::add_same>(); });
    k.add("", "FlatView", [](const runtime::kernel_build_info&) { return std::make_unique<flat_view>(); });
    k.add("", "OnesLikeValue", [](const runtime::kernel_build_info&) { return std::make_unique<ones_like_value>(); });
    k.add("", "Total", [](const runtime::kernel_build_info&) { return std::make_unique<total>(); });
    k.add("", "AddOneViaScratch", [](const runtime::kernel_build_info&) { return std::make_unique<add_one_via_scratch>(false); });
    k.add("", "AddOneViaScaledScratch",
          [](const runtime::kernel_build_info&) { return std::make_unique<add_one_via_scratch>(true); });
    return k;
  }();
  return r;
}

runtime::session_options options(bool plan) {
  return runtime::session_options{.threads = 1, .kernels = &test_kernels(), .memory_plan = plan};
}

// a = x+1 is last read by the view v; v lives on until d. Were v's lifetime not added to a's,
// 2x (born after a's last direct read) would be planned over a, and d would not be 3x+2.
ir::model view_model() {
  ir::model m = ir::make_model("views");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {ir::dim("n")});
  ir::value* a = b.op("AddOne", {x});
  ir::value* v = b.op("FlatView", {a});
  ir::value* c = b.op("AddOne", {b.op("Add", {x, x})});
  ir::value* d = b.op("Add", {v, c});
  b.output(b.op("AddOne", {d}));
  m.graph().rename(m.graph().outputs()[0], "out");
  return m;
}

// a = x+1 is live while the scratch step runs; out = (x+1) + (x+1) + 1.
ir::model scratch_model(const std::string& scratch_op) {
  ir::model m = ir::make_model("scratch");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {ir::dim("n")});
  ir::value* a = b.op("AddOne", {x});
  ir::value* s = b.op(scratch_op, {x});
  b.output(b.op("AddOne", {b.op("Add", {a, s})}));
  m.graph().rename(m.graph().outputs()[0], "out");
  return m;
}

tensor ramp(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = start + static_cast<float>(k);
  return tensor::from_values<float>({n}, v);
}

}  // namespace

TEST_CASE("memory plan: runs after the first place intermediates in the arena and give the same outputs",
          "[runtime][memory-plan]") {
  runtime::session planned(view_model(), options(true));
  runtime::session pooled(view_model(), options(false));
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    const tensor x = ramp(1000, static_cast<float>(run));
    const auto want = pooled.run({{"x", x}}).at("out").to_float();
    const auto got = planned.run({{"x", x}}).at("out").to_float();
    CHECK(got == want);
    CHECK(want[1] == static_cast<float>(run + 1) * 3 + 3);  // (x+1) + (2x+1) + 1
    CHECK(planned.memory_plan().active == (run > 0));
  }
  CHECK_FALSE(pooled.memory_plan().active);
  const runtime::memory_plan_info info = planned.memory_plan();
  CHECK(info.planned_tensors == 4);  // a, 2x, c, d; the view and the output are not planned
  CHECK(info.naive_bytes == 4 * 4032);  // 4000 bytes each, aligned to 64
  CHECK(info.arena_bytes <= info.naive_bytes);
  CHECK(info.arena_bytes >= info.lower_bound_bytes);
}

TEST_CASE("memory plan: new input shapes trace a new plan", "[runtime][memory-plan]") {
  runtime::session s(view_model(), options(true));
  for (std::int64_t n : {16, 16, 4096, 4096, 16}) {
    CAPTURE(n);
    const auto out = s.run({{"x", ramp(n, 1.0f)}}).at("out").to_float();
    REQUIRE(out.size() == static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < out.size(); ++k) REQUIRE(out[k] == 3.0f * (1.0f + static_cast<float>(k)) + 3.0f);
  }
  CHECK(s.memory_plan().naive_bytes == 4 * 16 * 4);
}

TEST_CASE("memory plan: each input shape keeps its plan, so alternating shapes trace once each", "[runtime][memory-plan]") {
  runtime::session s(view_model(), options(true));
  // A server's batches alternate between a few sizes: each is traced on first sight only,
  // up to 8 shapes; a ninth evicts the least recently used, which is traced again later.
  const std::vector<std::int64_t> sizes{16, 4096, 16, 4096, 64, 16, 1, 2, 3, 4, 5, 6, 16, 7, 4096};
  std::vector<std::int64_t> seen;
  for (std::int64_t n : sizes) {
    CAPTURE(n);
    const auto out = s.run({{"x", ramp(n, 2.0f)}}).at("out").to_float();
    REQUIRE(out.size() == static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < out.size(); ++k) REQUIRE(out[k] == 3.0f * (2.0f + static_cast<float>(k)) + 3.0f);
    const bool first_time = std::find(seen.begin(), seen.end(), n) == seen.end();
    seen.push_back(n);
    if (n != 4096 || seen.size() < 10) CHECK(s.memory_plan().active == !first_time);
    CHECK(s.memory_plan().naive_bytes == 4 * static_cast<std::size_t>((n * 4 + 63) / 64 * 64));
  }
  CHECK_FALSE(s.memory_plan().active);  // 4096 was the least recently used of nine shapes: traced again
}

TEST_CASE("memory plan: outputs that view an intermediate stay the caller's", "[runtime][memory-plan]") {
  ir::model m = ir::make_model("view-out");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {8});
  b.output(b.op("FlatView", {b.op("AddOne", {b.op("AddOne", {x})})}));
  m.graph().rename(m.graph().outputs()[0], "out");
  runtime::session s(m, options(true));
  std::vector<std::vector<float>> results;
  std::vector<runtime::tensor_map> kept;
  for (int run = 0; run < 3; ++run) kept.push_back(s.run({{"x", ramp(8, static_cast<float>(10 * run))}}));
  for (int run = 0; run < 3; ++run) CHECK(kept[static_cast<std::size_t>(run)].at("out").to_float()[0] == 10.0f * run + 2);
}

TEST_CASE("memory plan: an output larger than planned goes to the heap and the plan is traced again",
          "[runtime][memory-plan]") {
  ir::model m = ir::make_model("value-sized");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1});
  b.output(b.op("Total", {b.op("AddOne", {b.op("OnesLikeValue", {x})})}));
  m.graph().rename(m.graph().outputs()[0], "out");
  runtime::session s(m, options(true));
  for (float n : {10.0f, 10.0f, 5000.0f, 5000.0f, 5000.0f, 3.0f}) {
    CAPTURE(n);
    CHECK(s.run({{"x", tensor::from_values<float>({1}, {n})}}).at("out").to_float()[0] == 2 * n);
  }
  CHECK(s.memory_plan().naive_bytes == 2 * 20032);  // traced again at 5000 (aligned to 64), big enough for 3
}

TEST_CASE("memory plan: a step's scratch is planned into the arena, apart from the tensors live at that step",
          "[runtime][memory-plan]") {
  for (const bool plan : {true, false}) {
    CAPTURE(plan);
    runtime::session s(scratch_model("AddOneViaScratch"), options(plan));
    for (int run = 0; run < 3; ++run) {
      CAPTURE(run);
      const auto out = s.run({{"x", ramp(1000, static_cast<float>(run))}}).at("out").to_float();
      REQUIRE(out.size() == 1000);
      for (std::size_t k = 0; k < out.size(); ++k) REQUIRE(out[k] == 2.0f * (static_cast<float>(run + k) + 1.0f) + 1.0f);
    }
    CHECK(s.memory_plan().active == plan);
  }
  runtime::session s(scratch_model("AddOneViaScratch"), options(true));
  (void)s.run({{"x", ramp(1000, 0.0f)}});
  const runtime::memory_plan_info info = s.memory_plan();
  CHECK(info.planned_tensors == 3);           // a, the scratch step's output and the sum
  CHECK(info.naive_bytes == 4 * 4032);        // and the scratch, 4000 bytes aligned to 64
}

TEST_CASE("memory plan: a step asking for more scratch than planned gets its own and the plan is traced again",
          "[runtime][memory-plan]") {
  runtime::session s(scratch_model("AddOneViaScaledScratch"), options(true));
  // x[0] scales the scratch: 2, then 50 (more than planned), then 50 again from the new plan.
  for (const float first : {2.0f, 2.0f, 50.0f, 50.0f, 2.0f}) {
    CAPTURE(first);
    tensor x = ramp(100, first);
    const auto out = s.run({{"x", x}}).at("out").to_float();
    for (std::size_t k = 0; k < out.size(); ++k) REQUIRE(out[k] == 2.0f * (first + static_cast<float>(k) + 1.0f) + 1.0f);
  }
  CHECK(s.memory_plan().naive_bytes == 3 * 448 + 20032);  // traced again at 50: 100 floats x 50, aligned to 64
}
