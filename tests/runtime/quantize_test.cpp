// QuantizeLinear and DequantizeLinear: per-axis parameters, rounding, saturation and the
// forms the backend tests do not cover.

#include <catch2/catch.hpp>

#include <cmath>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

/// Attributes are move-only, so no initializer lists.
template <class... A>
std::vector<ir::attribute> attrs(A&&... a) {
  std::vector<ir::attribute> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

/// Runs a one-node model of `op` on `inputs` (opset 21 unless given) and returns output 0.
tensor run_op(const std::string& op, const std::vector<tensor>& inputs, std::vector<ir::attribute> attributes = {},
              std::int64_t opset = 21) {
  ir::model m = ir::make_model("one_op", opset);
  ir::graph_builder b(m.graph());
  std::vector<ir::value*> ins;
  runtime::tensor_map feeds;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::string name = "x" + std::to_string(k);
    ins.push_back(b.input(name, inputs[k].dtype(), ir::shape(inputs[k].shape().begin(), inputs[k].shape().end())));
    feeds[name] = inputs[k];
  }
  ir::node* n = m.graph().add_node(ir::node_spec{op, ins, {"y"}, std::move(attributes), "q", {}});
  m.graph().add_output(n->outputs()[0]);
  runtime::session s(m, runtime::session_options{.threads = 1});
  return s.run(feeds).at("y");
}

template <class T>
std::vector<T> values_of(const tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("per-axis quantization on axis 1 uses each channel's scale and zero point", "[runtime][quantize]") {
  // x is [2, 3, 2]: channel c of both batches holds {c + 1, -(c + 1)} * 10.
  const tensor x = tensor::from_values<float>({2, 3, 2}, {10, -10, 20, -20, 30, -30, 10, -10, 20, -20, 30, -30});
  const tensor scale = tensor::from_values<float>({3}, {1.0f, 2.0f, 4.0f});
  const tensor zero = tensor::from_values<std::uint8_t>({3}, {128, 100, 0});
  const tensor y = run_op("QuantizeLinear", {x, scale, zero}, attrs(ir::attribute::make_int("axis", 1)));
  REQUIRE(y.dtype() == ir::data_type::uint8);
  const std::vector<std::uint8_t> per_batch = {138, 118, 110, 90, 8, 0};  // 30/4 = 7.5 rounds to 8; -7.5 saturates
  std::vector<std::uint8_t> expected = per_batch;
  expected.insert(expected.end(), per_batch.begin(), per_batch.end());
  CHECK(values_of<std::uint8_t>(y) == expected);

  SECTION("and dequantizing gives x back within half a step of its channel") {
    const tensor back = run_op("DequantizeLinear", {y, scale, zero}, attrs(ir::attribute::make_int("axis", 1)));
    const auto xv = x.values<float>();
    const auto bv = back.values<float>();
    for (std::size_t k = 0; k < xv.size(); ++k) {
      const float step = scale.values<float>()[(k / 2) % 3];
      if (xv[k] == -30) continue;  // saturated at 0: 0 - 0 = 0 vs -30
      CAPTURE(k);
      CHECK(std::fabs(bv[k] - xv[k]) <= step / 2);
    }
  }
}

TEST_CASE("quantization rounds half to even and saturates", "[runtime][quantize]") {
  const tensor x = tensor::from_values<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.0f, -1000.0f, std::nanf("")});
  const tensor scale = tensor::from_values<float>({}, {1.0f});
  const tensor zero = tensor::from_values<std::int8_t>({}, {0});
  const tensor y = run_op("QuantizeLinear", {x, scale, zero}, {}, 13);
  CHECK(values_of<std::int8_t>(y) == std::vector<std::int8_t>{0, 2, 2, 0, -2, 127, -128, -128});
}

TEST_CASE("quantization without a zero point gives uint8 or the output_dtype", "[runtime][quantize]") {
  const tensor x = tensor::from_values<float>({3}, {-1.0f, 2.6f, 70000.0f});
  const tensor scale = tensor::from_values<float>({}, {1.0f});
  CHECK(values_of<std::uint8_t>(run_op("QuantizeLinear", {x, scale})) == std::vector<std::uint8_t>{0, 3, 255});
  const tensor y = run_op("QuantizeLinear", {x, scale}, attrs(ir::attribute::make_int("output_dtype", 5)));  // int16
  CHECK(values_of<std::int16_t>(y) == std::vector<std::int16_t>{-1, 3, 32767});
}

TEST_CASE("int32 dequantization needs no zero point", "[runtime][quantize]") {
  const tensor x = tensor::from_values<std::int32_t>({3}, {-4, 0, 1000});
  const tensor scale = tensor::from_values<float>({}, {0.25f});
  CHECK(values_of<float>(run_op("DequantizeLinear", {x, scale})) == std::vector<float>{-1.0f, 0.0f, 250.0f});
}

TEST_CASE("a per-axis scale that does not match the axis fails naming the node", "[runtime][quantize]") {
  const tensor x = tensor::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor scale = tensor::from_values<float>({2}, {1.0f, 2.0f});
  REQUIRE_THROWS_WITH(run_op("QuantizeLinear", {x, scale}, attrs(ir::attribute::make_int("axis", 1))),
                      Catch::Contains("node 'q' (QuantizeLinear): scale has 2 elements but axis 1 of the input has 3"));
}

TEST_CASE("blocked quantization is reported as unsupported", "[runtime][quantize]") {
  const tensor x = tensor::from_values<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const tensor scale = tensor::from_values<float>({2, 2}, {1, 1, 1, 1});
  try {
    run_op("QuantizeLinear", {x, scale},
           attrs(ir::attribute::make_int("axis", 1), ir::attribute::make_int("block_size", 2)));
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::unsupported);
  }
}
