// The session's contract, checked with test kernels of our own so that it does not depend on
// the built-in kernel families.

#include <catch2/catch.hpp>

#include "inferopt/core/cpu_count.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "runtime/test_kernels.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

runtime::kernel_registry test_kernels() {
  runtime::kernel_registry r;
  r.add("", "AddOne", [](const runtime::kernel_build_info&) { return std::make_unique<test::add_one>(); });
  r.add("", "Add", [](const runtime::kernel_build_info&) { return std::make_unique<test::add_same>(); });
  return r;
}

ir::model chain_model() {
  ir::model m = ir::make_model("chain");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {ir::dim("n"), 3});
  ir::value* y = b.op("AddOne", {x});
  ir::value* z = b.op("AddOne", {y});
  b.output(b.op("Add", {z, y}));
  m.graph().rename(m.graph().outputs()[0], "out");
  return m;
}

}  // namespace

TEST_CASE("a session runs a graph and resolves symbolic dims at run time", "[runtime][session]") {
  const auto kernels = test_kernels();
  runtime::session s(chain_model(), runtime::session_options{.threads = 1, .kernels = &kernels});
  for (std::int64_t n : {1, 4}) {
    std::vector<float> values(static_cast<std::size_t>(3 * n), 1.0f);
    auto out = s.run({{"x", tensor::from_values<float>({n, 3}, values)}});
    const tensor& y = out.at("out");
    CHECK(y.shape() == runtime::shape_t{n, 3});
    CHECK(y.to_float() == std::vector<float>(values.size(), 5.0f));  // (1+1+1) + (1+1)
  }
}

TEST_CASE("a session runs on at most the CPUs the process may use, and all of them by default", "[runtime][session]") {
  const auto kernels = test_kernels();
  const int cpus = usable_cpu_count();
  CHECK(runtime::session(chain_model(), runtime::session_options{.threads = cpus + 7, .kernels = &kernels}).threads() == cpus);
  CHECK(runtime::session(chain_model(), runtime::session_options{.kernels = &kernels}).threads() == cpus);
  CHECK(runtime::session(chain_model(), runtime::session_options{.threads = 1, .kernels = &kernels}).threads() == 1);
}

TEST_CASE("the observer sees every intermediate value", "[runtime][session]") {
  const auto kernels = test_kernels();
  std::vector<std::string> seen;
  runtime::session s(chain_model(), runtime::session_options{
                                        .threads = 1,
                                        .on_value = [&](std::string_view name, const tensor&) { seen.emplace_back(name); },
                                        .kernels = &kernels});
  s.run({{"x", tensor::from_values<float>({1, 3}, {0, 0, 0})}});
  REQUIRE(seen.size() == 3);
  CHECK(seen.back() == "out");
}

TEST_CASE("outputs returned to the caller are never overwritten by a later run", "[runtime][session]") {
  const auto kernels = test_kernels();
  runtime::session s(chain_model(), runtime::session_options{.threads = 1, .kernels = &kernels});
  auto first = s.run({{"x", tensor::from_values<float>({1, 3}, {0, 0, 0})}});
  auto second = s.run({{"x", tensor::from_values<float>({1, 3}, {10, 10, 10})}});
  CHECK(first.at("out").to_float() == std::vector<float>{3, 3, 3});
  CHECK(second.at("out").to_float() == std::vector<float>{23, 23, 23});
}

TEST_CASE("bad feeds are refused naming the input", "[runtime][session]") {
  const auto kernels = test_kernels();
  runtime::session s(chain_model(), runtime::session_options{.threads = 1, .kernels = &kernels});
  auto message = [&](const runtime::tensor_map& feeds) {
    try {
      s.run(feeds);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message({}), Catch::Contains("input 'x' is missing"));
  CHECK_THAT(message({{"x", tensor::from_values<std::int64_t>({1, 3}, {0, 0, 0})}}), Catch::Contains("input 'x': expected float"));
  CHECK_THAT(message({{"x", tensor::from_values<float>({3}, {0, 0, 0})}}), Catch::Contains("expected rank 2"));
  CHECK_THAT(message({{"x", tensor::from_values<float>({1, 2}, {0, 0})}}), Catch::Contains("dim 1 must be 3"));
  CHECK_THAT(message({{"y", tensor::from_values<float>({1, 3}, {0, 0, 0})}}), Catch::Contains("'y' is not an input"));
}

TEST_CASE("check_inputs refuses what run refuses, with the same message, and runs nothing", "[runtime][session]") {
  const auto kernels = test_kernels();
  int computed = 0;
  runtime::session s(chain_model(), runtime::session_options{
                                        .threads = 1,
                                        .on_value = [&](std::string_view, const tensor&) { ++computed; },
                                        .kernels = &kernels});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::vector<runtime::tensor_map> bad = {
      {},
      {{"x", tensor::from_values<std::int64_t>({1, 3}, {0, 0, 0})}},
      {{"x", tensor::from_values<float>({3}, {0, 0, 0})}},
      {{"x", tensor::from_values<float>({1, 2}, {0, 0})}},
      {{"y", tensor::from_values<float>({1, 3}, {0, 0, 0})}}};
  for (const runtime::tensor_map& feeds : bad) {
    const std::string checked = message([&] { s.check_inputs(feeds); });
    CAPTURE(checked);
    CHECK(checked != "no error");
    CHECK(computed == 0);
    CHECK(checked == message([&] { (void)s.run(feeds); }));
  }
  CHECK_NOTHROW(s.check_inputs({{"x", tensor::from_values<float>({2, 3}, {0, 0, 0, 0, 0, 0})}}));
}

TEST_CASE("unsupported operators are all listed before anything runs", "[runtime][session]") {
  const auto kernels = test_kernels();
  ir::model m = ir::make_model("unsupported");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1});
  ir::value* y = b.op("Frobnicate", {x});
  y = b.op("Twiddle", {y});
  b.output(b.op("Frobnicate", {y}));
  try {
    runtime::session s(m, runtime::session_options{.kernels = &kernels});
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("Frobnicate (domain 'ai.onnx', opset 17)"));
    CHECK_THAT(e.what(), Catch::Contains("Twiddle"));
  }
}

TEST_CASE("a kernel error names the node", "[runtime][session]") {
  const auto kernels = test_kernels();
  ir::model m = ir::make_model("mismatch");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2});
  ir::value* c = b.constant("c", {3}, {1, 2, 3});
  b.output(b.op("Add", {x, c}, {}, "the_add"));
  runtime::session s(m, runtime::session_options{.kernels = &kernels});
  CHECK_THROWS_WITH(s.run({{"x", tensor::from_values<float>({2}, {0, 0})}}), Catch::Contains("'the_add' (Add): shapes differ"));
}
