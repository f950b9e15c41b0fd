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

TEST_CASE("with hand_over_outputs the caller holds each output alone, run after run", "[runtime][session]") {
  const auto kernels = test_kernels();
  for (bool hand_over : {false, true}) {
    CAPTURE(hand_over);
    runtime::session s(chain_model(), runtime::session_options{.threads = 1, .kernels = &kernels, .hand_over_outputs = hand_over});
    for (float x : {0.0f, 10.0f, 20.0f}) {
      auto out = s.run({{"x", tensor::from_values<float>({1, 3}, {x, x, x})}});
      CHECK(out.at("out").owns_storage_alone() == hand_over);
      CHECK(out.at("out").to_float() == std::vector<float>(3, 2 * x + 3));
    }
  }
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

namespace {

/// y[r, j] = sum_i a[r, i] w[i, j] (+ bias[j]), in double: the reference for the packed products.
std::vector<double> reference_product(const std::vector<float>& a, const std::vector<float>& w, std::int64_t rows,
                                      std::int64_t k, std::int64_t n, bool w_transposed, const std::vector<float>& bias) {
  std::vector<double> y(static_cast<std::size_t>(rows * n), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = bias.empty() ? 0.0 : bias[j];
      for (std::int64_t i = 0; i < k; ++i) sum += double(a[r * k + i]) * (w_transposed ? w[j * k + i] : w[i * n + j]);
      y[r * n + j] = sum;
    }
  }
  return y;
}

}  // namespace

TEST_CASE("a session releases the weights its products packed and computes every later shape from their copy",
          "[runtime][session]") {
  constexpr std::int64_t k = 32, n = 24;
  ir::model m = ir::make_model("released_products");
  ir::graph& g = m.graph();
  ir::graph_builder gb(g);
  ir::value* a = gb.input("a", ir::data_type::float32, {ir::dim("rows"), ir::dim(k)});
  std::vector<float> w(k * n), wt(n * k), bias(n);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7) % 13) * 0.1f - 0.6f;
  for (std::size_t i = 0; i < wt.size(); ++i) wt[i] = static_cast<float>((i * 5) % 11) * 0.1f - 0.5f;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i);
  ir::value* wv = gb.constant("w", {k, n}, w);
  ir::value* wtv = gb.constant("wt", {n, k}, wt);
  gb.output(gb.op("MatMul", {a, wv}));
  std::vector<ir::attribute> trans;
  trans.push_back(ir::attribute::make_int("transB", 1));
  gb.output(gb.op("Gemm", {a, wtv, gb.constant("bias", {n}, bias)}, std::move(trans)));
  runtime::session s(m, runtime::session_options{.threads = 1});
  // More row counts than a product keeps primitives for: the later ones run nn::gemm on W
  // unpacked from the copy.
  for (std::int64_t rows : {3, 1, 5, 8, 2, 7, 3}) {
    INFO("rows " << rows);
    std::vector<float> av(static_cast<std::size_t>(rows * k));
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>((i * 3) % 17) * 0.05f - 0.4f;
    const runtime::tensor_map out = s.run({{"a", runtime::tensor::from_values<float>({rows, k}, av)}});
    const std::vector<double> want_mm = reference_product(av, w, rows, k, n, false, {});
    const std::vector<double> want_gemm = reference_product(av, wt, rows, k, n, true, bias);
    const runtime::tensor& mm = out.at(g.outputs()[0]->name());
    const runtime::tensor& gemm = out.at(g.outputs()[1]->name());
    for (std::size_t i = 0; i < want_mm.size(); ++i) {
      CHECK(mm.data<float>()[i] == Approx(want_mm[i]).margin(1e-4));
      CHECK(gemm.data<float>()[i] == Approx(want_gemm[i]).margin(1e-4));
    }
    if (runtime::int8_kernels_available()) {  // oneDNN serves: its products packed W, the session let go
      CHECK(wv->initializer()->bytes.use_count() == 1);
      CHECK(wtv->initializer()->bytes.use_count() == 1);
    }
  }
}
