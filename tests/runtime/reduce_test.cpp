// The reduce kernel family (src/runtime/kernels/reduce*.cpp) run through a session: results
// against naive loops over mixed reduced/kept axes, the axes attribute and input forms, and
// bad axes refused with an error naming the node.

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"

using namespace inferopt;
using runtime::shape_t;
using runtime::tensor;

namespace {

/// Attributes are move-only, so a braced list cannot hold them.
template <class... A>
std::vector<ir::attribute> attrs(A&&... a) {
  std::vector<ir::attribute> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

struct feed {
  std::string name;
  tensor value;
};

/// Runs one `op` node named `node_under_test` over graph inputs named after `feeds`.
tensor run_node(const std::string& op, const std::vector<feed>& feeds, std::vector<ir::attribute> attributes = {},
                std::int64_t opset = 17) {
  ir::model m = ir::make_model("single_node", opset);
  ir::graph_builder b(m.graph());
  std::vector<ir::value*> inputs;
  runtime::tensor_map map;
  for (const feed& f : feeds) {
    inputs.push_back(b.input(f.name, f.value.dtype(), ir::shape(f.value.shape().begin(), f.value.shape().end())));
    map[f.name] = f.value;
  }
  ir::value* y = b.op(op, inputs, std::move(attributes), "node_under_test");
  b.output(y);
  runtime::session s(m, runtime::session_options{.threads = 2});
  return s.run(map).at(y->name());
}

tensor ramp(shape_t shape) {
  std::vector<float> values(static_cast<std::size_t>(ir::tensor::element_count(shape)));
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>((k * 7) % 11) - 5.0f;
  return tensor::from_values<float>(std::move(shape), values);
}

/// Sums (or takes the max of) a [2,3,4,5] tensor over the axes set in `mask`, naively.
std::vector<float> naive(const std::vector<float>& x, std::array<bool, 4> mask, bool max) {
  const std::array<std::int64_t, 4> dims{2, 3, 4, 5};
  std::array<std::int64_t, 4> out_dims{};
  for (std::size_t k = 0; k < 4; ++k) out_dims[k] = mask[k] ? 1 : dims[k];
  std::vector<float> out(static_cast<std::size_t>(out_dims[0] * out_dims[1] * out_dims[2] * out_dims[3]),
                         max ? -INFINITY : 0.0f);
  std::size_t flat = 0;
  for (std::int64_t a = 0; a < 2; ++a) {
    for (std::int64_t b = 0; b < 3; ++b) {
      for (std::int64_t c = 0; c < 4; ++c) {
        for (std::int64_t d = 0; d < 5; ++d) {
          const std::array<std::int64_t, 4> idx{mask[0] ? 0 : a, mask[1] ? 0 : b, mask[2] ? 0 : c, mask[3] ? 0 : d};
          const auto o = static_cast<std::size_t>(((idx[0] * out_dims[1] + idx[1]) * out_dims[2] + idx[2]) * out_dims[3] + idx[3]);
          const float v = x[flat++];
          out[o] = max ? std::max(out[o], v) : out[o] + v;
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("reduce sum and max match naive loops for every mix of reduced axes", "[runtime][reduce]") {
  const tensor x = ramp({2, 3, 4, 5});
  const int bits = GENERATE(range(1, 16));
  std::array<bool, 4> mask{};
  std::vector<std::int64_t> axes;
  for (std::size_t k = 0; k < 4; ++k) {
    mask[k] = (bits >> k) & 1;
    if (mask[k]) axes.push_back(static_cast<std::int64_t>(k));
  }
  CAPTURE(axes);
  SECTION("ReduceSum with axes as an input (opset 13)") {
    const tensor y = run_node("ReduceSum", {{"x", x}, {"axes", tensor::from_values<std::int64_t>({static_cast<std::int64_t>(axes.size())}, axes)}});
    const std::vector<float> want = naive(x.to_float(), mask, false);
    const std::vector<float> got = y.to_float();
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).margin(1e-5));  // small integers: exact
  }
  SECTION("ReduceMax with axes as an attribute (opset 17)") {
    const tensor y = run_node("ReduceMax", {{"x", x}}, attrs(ir::attribute::make_ints("axes", axes)));
    CHECK(y.to_float() == naive(x.to_float(), mask, true));
  }
}

TEST_CASE("keepdims=0 drops the reduced axes and empty axes reduce everything", "[runtime][reduce]") {
  const tensor x = ramp({2, 3});
  const tensor y = run_node("ReduceMean", {{"x", x}}, attrs(ir::attribute::make_ints("axes", {-1}), ir::attribute::make_int("keepdims", 0)));
  CHECK(y.shape() == shape_t{2});
  const tensor all = run_node("ReduceSumSquare", {{"x", x}});
  CHECK(all.shape() == shape_t{1, 1});
  float want = 0;
  for (float v : x.to_float()) want += v * v;
  CHECK(all.to_float()[0] == Approx(want));
}

TEST_CASE("noop_with_empty_axes leaves the input unreduced", "[runtime][reduce]") {
  const tensor x = ramp({2, 3});
  const tensor y = run_node("ReduceSum", {{"x", x}, {"axes", tensor::from_values<std::int64_t>({0}, {})}},
                            attrs(ir::attribute::make_int("noop_with_empty_axes", 1)));
  CHECK(y.shape() == shape_t{2, 3});
  CHECK(y.to_float() == x.to_float());
}

TEST_CASE("log-sum-exp stays finite for large inputs", "[runtime][reduce]") {
  const tensor x = tensor::from_values<float>({2}, {1000.0f, 1000.0f});
  const tensor y = run_node("ReduceLogSumExp", {{"x", x}}, attrs(ir::attribute::make_int("keepdims", 0)));
  CHECK(y.to_float()[0] == Approx(1000.0f + std::log(2.0f)));
}

TEST_CASE("integer sums stay exact in 64 bits", "[runtime][reduce]") {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const tensor x = tensor::from_values<std::int64_t>({2}, {big, 2});
  CHECK(run_node("ReduceSum", {{"x", x}, {"axes", tensor::from_values<std::int64_t>({1}, {0})}}).to_int64() ==
        std::vector<std::int64_t>{big + 2});
}

TEST_CASE("reductions over an empty axis give the identity of the op", "[runtime][reduce]") {
  const tensor x = tensor::from_values<float>({2, 0}, {});
  CHECK(run_node("ReduceSum", {{"x", x}, {"axes", tensor::from_values<std::int64_t>({1}, {1})}}).to_float() == std::vector<float>{0, 0});
  CHECK(run_node("ReduceProd", {{"x", x}}, attrs(ir::attribute::make_ints("axes", {1}))).to_float() == std::vector<float>{1, 1});
  CHECK(std::isinf(run_node("ReduceMax", {{"x", x}}, attrs(ir::attribute::make_ints("axes", {1}))).to_float()[0]));
}

TEST_CASE("reduce refuses an axis out of range or given twice", "[runtime][reduce]") {
  const tensor x = ramp({2, 3});
  auto expect_error = [](auto&& fn, const std::string& what) {
    try {
      fn();
    } catch (const error& e) {
      const std::string message = e.what();
      CAPTURE(message);
      CHECK(message.find("node_under_test") != std::string::npos);
      CHECK(message.find(what) != std::string::npos);
      return;
    }
    FAIL("no error was thrown");
  };
  expect_error([&] { run_node("ReduceMean", {{"x", x}}, attrs(ir::attribute::make_ints("axes", {2}))); }, "out of range");
  expect_error([&] { run_node("ReduceMean", {{"x", x}}, attrs(ir::attribute::make_ints("axes", {1, -1}))); }, "twice");
  expect_error([&] { run_node("ArgMax", {{"x", x}}, attrs(ir::attribute::make_int("axis", -3))); }, "out of range");
}

TEST_CASE("argmax and argmin pick the first or the last extreme", "[runtime][reduce]") {
  const tensor x = tensor::from_values<float>({2, 3}, {1, 5, 5, 2, 2, 0});
  CHECK(run_node("ArgMax", {{"x", x}}, attrs(ir::attribute::make_int("axis", 1))).to_int64() == std::vector<std::int64_t>{1, 0});
  CHECK(run_node("ArgMax", {{"x", x}}, attrs(ir::attribute::make_int("axis", 1), ir::attribute::make_int("select_last_index", 1)))
            .to_int64() == std::vector<std::int64_t>{2, 1});
  const tensor y = run_node("ArgMin", {{"x", x}}, attrs(ir::attribute::make_int("axis", 0), ir::attribute::make_int("keepdims", 0)));
  CHECK(y.shape() == shape_t{3});
  CHECK(y.to_int64() == std::vector<std::int64_t>{0, 1, 1});
}
