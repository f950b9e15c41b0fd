// The elementwise kernel family: behaviour the ONNX backend tests do not pin down (error
// reporting, exact float16 rounding, integer division, legacy broadcasting, the threaded
// broadcast loops).

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/core/float16.hpp"
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

struct op_options {
  std::vector<ir::attribute> attributes;
  std::int64_t opset = 17;
  int threads = 1;
  std::string node_name = "node";
  std::string domain;  // imported at version 1 when not ai.onnx
};

/// Runs a one-node model of `op` on `inputs` and returns its outputs in order.
std::vector<tensor> run_op_outputs(const std::string& op, const std::vector<tensor>& inputs, op_options o = {},
                                   std::size_t outputs = 1) {
  ir::model m = ir::make_model("one_op", o.opset);
  if (!o.domain.empty()) m.opsets.push_back({o.domain, 1});
  ir::graph_builder b(m.graph());
  std::vector<ir::value*> ins;
  runtime::tensor_map feeds;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::string name = "x" + std::to_string(k);
    ir::shape dims(inputs[k].shape().begin(), inputs[k].shape().end());
    ins.push_back(b.input(name, inputs[k].dtype(), dims));
    feeds[name] = inputs[k];
  }
  ir::node_spec spec{op, ins, {}, std::move(o.attributes), o.node_name, o.domain};
  for (std::size_t k = 0; k < outputs; ++k) spec.outputs.push_back("y" + std::to_string(k));
  ir::node* n = m.graph().add_node(std::move(spec));
  for (ir::value* v : n->outputs()) m.graph().add_output(v);
  runtime::session s(m, runtime::session_options{.threads = o.threads});
  auto result = s.run(feeds);
  std::vector<tensor> out;
  for (std::size_t k = 0; k < outputs; ++k) out.push_back(result.at("y" + std::to_string(k)));
  return out;
}

tensor run_op(const std::string& op, const std::vector<tensor>& inputs, op_options o = {}) {
  return run_op_outputs(op, inputs, std::move(o)).front();
}

template <class T>
std::vector<T> values_of(const tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}

tensor half_tensor(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits;
  for (float v : values) bits.push_back(inferopt::float_to_half(v));
  tensor t(ir::data_type::float16, {static_cast<std::int64_t>(values.size())});
  std::memcpy(t.mutable_raw(), bits.data(), bits.size() * 2);
  return t;
}

tensor bool_tensor(runtime::shape_t shape, const std::vector<std::uint8_t>& values) {
  tensor t(ir::data_type::boolean, std::move(shape));
  std::copy(values.begin(), values.end(), t.mutable_data<std::uint8_t>());
  return t;
}

std::vector<float> iota_values(std::int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) v[k] = std::sin(static_cast<float>(k)) * scale;
  return v;
}

}  // namespace

TEST_CASE("inputs that do not broadcast fail with an error naming the node", "[runtime][elementwise]") {
  const tensor a = tensor::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const tensor b = tensor::from_values<float>({4}, {1, 2, 3, 4});
  for (const char* op : {"Add", "Mul", "Greater", "Max"}) {
    CAPTURE(op);
    try {
      run_op(op, {a, b}, {.node_name = "bad_node"});
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("node 'bad_node' (" + std::string(op) + ")"));
      CHECK_THAT(e.what(), Catch::Contains("[2,3] and [4] do not broadcast"));
    }
  }
}

TEST_CASE("cast to float16 and back returns every value float16 can represent", "[runtime][elementwise]") {
  const float min_subnormal = std::ldexp(1.0f, -24);
  const float min_normal = std::ldexp(1.0f, -14);
  const std::vector<float> exact = {
      0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, min_normal, min_subnormal, 3 * min_subnormal, 0.333251953125f};
  const tensor half = run_op("Cast", {tensor::from_values<float>({9}, exact)},
                             {.attributes = attrs(ir::attribute::make_int("to", 10))});
  REQUIRE(half.dtype() == ir::data_type::float16);
  const tensor back = run_op("Cast", {half}, {.attributes = attrs(ir::attribute::make_int("to", 1))});
  CHECK(values_of<float>(back) == exact);
  CHECK(std::signbit(values_of<float>(back)[1]));
}

TEST_CASE("float16 casts agree bit for bit with the reference conversions", "[runtime][elementwise]") {
  // The kernels use branch-free conversions that vectorize; detail/float16.hpp is the reference.
  SECTION("every float16 value to float") {
    tensor h(ir::data_type::float16, {65536});
    for (std::uint32_t k = 0; k < 65536; ++k) h.mutable_data<std::uint16_t>()[k] = static_cast<std::uint16_t>(k);
    const tensor f = run_op("Cast", {h}, {.attributes = attrs(ir::attribute::make_int("to", 1))});
    std::int64_t mismatches = 0;
    for (std::uint32_t k = 0; k < 65536; ++k) {
      const float want = inferopt::half_to_float(static_cast<std::uint16_t>(k));
      const float got = f.values<float>()[k];
      mismatches +=
          std::isnan(want) ? !std::isnan(got) : std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want);
    }
    CHECK(mismatches == 0);
  }
  SECTION("a spread of float bit patterns to float16") {
    std::vector<float> in;
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 997)
      in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    const auto n = static_cast<std::int64_t>(in.size());
    const tensor h =
        run_op("Cast", {tensor::from_values<float>({n}, in)}, {.attributes = attrs(ir::attribute::make_int("to", 10))});
    std::int64_t mismatches = 0;
    for (std::int64_t k = 0; k < n; ++k)
      mismatches += h.values<std::uint16_t>()[k] != inferopt::float_to_half(in[k]);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("cast to float16 rounds to nearest even in a single rounding", "[runtime][elementwise]") {
  const double tie = 1.0 + std::ldexp(1.0, -11);  // halfway between 1 and the next half
  const std::vector<double> in = {tie,  1.0 + 3 * std::ldexp(1.0, -11),          tie + std::ldexp(1.0, -40), 1e6,
                                  -1e6, std::numeric_limits<double>::quiet_NaN()};
  const tensor half =
      run_op("Cast", {tensor::from_values<double>({6}, in)}, {.attributes = attrs(ir::attribute::make_int("to", 10))});
  const std::vector<float> got = half.to_float();
  CHECK(got[0] == 1.0f);                                           // tie to even
  CHECK(got[1] == static_cast<float>(1.0 + std::ldexp(1.0, -9)));  // tie to even, upwards
  // Just above the tie: a double-to-float-to-half path would land on the tie and round down.
  CHECK(got[2] == static_cast<float>(1.0 + std::ldexp(1.0, -10)));
  CHECK(got[3] == std::numeric_limits<float>::infinity());
  CHECK(got[4] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(got[5]));
}

TEST_CASE("cast from float to integer truncates, saturates and maps NaN to zero", "[runtime][elementwise]") {
  const tensor x = tensor::from_values<float>({6}, {2.9f, -2.9f, 300.0f, -300.0f, std::nanf(""), 1e20f});
  const tensor y = run_op("Cast", {x}, {.attributes = attrs(ir::attribute::make_int("to", 3))});  // int8
  CHECK(values_of<std::int8_t>(y) == std::vector<std::int8_t>{2, -2, 127, -128, 0, 127});
  const tensor b = run_op("Cast", {x}, {.attributes = attrs(ir::attribute::make_int("to", 9))});  // bool
  CHECK(values_of<std::uint8_t>(b) == std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1});
}

TEST_CASE("integer division truncates toward zero like C", "[runtime][elementwise]") {
  const std::int32_t min = std::numeric_limits<std::int32_t>::min();
  SECTION("int32") {
    const tensor a = tensor::from_values<std::int32_t>({5}, {7, -7, 7, -7, min});
    const tensor b = tensor::from_values<std::int32_t>({5}, {2, 2, -2, -2, -1});
    CHECK(values_of<std::int32_t>(run_op("Div", {a, b})) == std::vector<std::int32_t>{3, -3, -3, 3, min});  // wraps
  }
  SECTION("uint8 with a broadcast scalar") {
    const tensor a = tensor::from_values<std::uint8_t>({4}, {255, 7, 6, 0});
    const tensor b = tensor::from_values<std::uint8_t>({}, {4});
    CHECK(values_of<std::uint8_t>(run_op("Div", {a, b})) == std::vector<std::uint8_t>{63, 1, 1, 0});
  }
  SECTION("Mod takes the divisor's sign, or the dividend's with fmod = 1") {
    const tensor a = tensor::from_values<std::int64_t>({4}, {-7, 7, -7, 7});
    const tensor b = tensor::from_values<std::int64_t>({4}, {3, -3, -3, 3});
    CHECK(values_of<std::int64_t>(run_op("Mod", {a, b})) == std::vector<std::int64_t>{2, -2, -1, 1});
    CHECK(values_of<std::int64_t>(run_op("Mod", {a, b}, {.attributes = attrs(ir::attribute::make_int("fmod", 1))})) ==
          std::vector<std::int64_t>{-1, 1, -1, 1});
  }
  SECTION("by zero is an error, not a crash") {
    const tensor a = tensor::from_values<std::int32_t>({2}, {1, 2});
    const tensor b = tensor::from_values<std::int32_t>({2}, {1, 0});
    REQUIRE_THROWS_AS(run_op("Div", {a, b}), error);
    REQUIRE_THROWS_WITH(run_op("Mod", {a, b}), Catch::Contains("integer division by zero"));
  }
}

TEST_CASE("integer addition wraps around", "[runtime][elementwise]") {
  const tensor a = tensor::from_values<std::int8_t>({2}, {127, -128});
  const tensor b = tensor::from_values<std::int8_t>({2}, {1, -1});
  CHECK(values_of<std::int8_t>(run_op("Add", {a, b})) == std::vector<std::int8_t>{-128, 127});
}

TEST_CASE("threaded broadcast loops match a naive loop", "[runtime][elementwise]") {
  // Large enough that every shape below is split across threads.
  const std::int64_t n = 64, c = 3, w = 1000;
  const tensor a = tensor::from_values<float>({n, c, w}, iota_values(n * c * w, 2.0f));
  auto check = [&](const tensor& b, auto b_index) {
    const tensor y = run_op("Sub", {a, b}, {.threads = 4});
    REQUIRE(y.shape() == runtime::shape_t{n, c, w});
    const auto av = a.values<float>();
    const auto bv = b.values<float>();
    const auto yv = y.values<float>();
    std::int64_t mismatches = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < c; ++j) {
        for (std::int64_t k = 0; k < w; ++k) {
          const std::int64_t o = (i * c + j) * w + k;
          mismatches += yv[o] != av[o] - bv[b_index(i, j, k)];
        }
      }
    }
    CHECK(mismatches == 0);
  };
  SECTION("same shape") {
    check(a, [&](auto i, auto j, auto k) { return (i * c + j) * w + k; });
  }
  SECTION("scalar") {
    check(tensor::from_values<float>({}, {0.5f}), [](auto, auto, auto) { return 0; });
  }
  SECTION("per channel") {
    check(tensor::from_values<float>({c, 1}, {1, 2, 3}), [](auto, auto j, auto) { return j; });
  }
  SECTION("last axis") {
    check(tensor::from_values<float>({w}, iota_values(w, 1.0f)), [](auto, auto, auto k) { return k; });
  }
  SECTION("outer axes") {
    check(tensor::from_values<float>({n, 1, 1}, iota_values(n, 1.0f)), [](auto i, auto, auto) { return i; });
  }
}

TEST_CASE("unary ops split across threads give the one-thread result", "[runtime][elementwise]") {
  const std::int64_t n = 200003;  // not a multiple of the block or vector width
  const tensor x = tensor::from_values<float>({n}, iota_values(n, 6.0f));
  for (const char* op : {"Gelu", "Sigmoid", "Relu"}) {
    CAPTURE(op);
    const tensor one = run_op(op, {x}, {.opset = 20, .threads = 1});
    const tensor four = run_op(op, {x}, {.opset = 20, .threads = 4});
    CHECK(values_of<float>(one) == values_of<float>(four));
  }
}

TEST_CASE("erf GELU and BiasGelu keep float's relative precision over the whole range", "[runtime][elementwise]") {
  // Every instruction-set build runs this (the isa-variant tests): 0.5 v erfc(-v / sqrt 2) in
  // double is the reference, the negative tail included, where 1 + erf(x) would cancel.
  const std::int64_t rows = 3, width = 1001;  // odd widths leave a partial vector
  std::vector<float> xs(static_cast<std::size_t>(rows * width)), bias(static_cast<std::size_t>(width));
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(xs.size());
  for (std::size_t j = 0; j < bias.size(); ++j) bias[j] = 0.25f * std::sin(static_cast<float>(j));
  auto expected = [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); };
  // The fit is good to 1.2e-7; float rounding of the exponent -v^2/2 adds up to about v^2 ulp.
  auto tolerance = [](double v) { return 4e-7 + 2e-7 * v * v; };
  auto check = [&](const tensor& y, bool with_bias) {
    const std::vector<float> got = values_of<float>(y);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double v = static_cast<double>(xs[i]) + (with_bias ? static_cast<double>(bias[i % bias.size()]) : 0.0);
      const double want = expected(static_cast<double>(static_cast<float>(v)));
      CAPTURE(v, want, got[i]);
      CHECK(std::abs(got[i] - want) <= tolerance(v) * std::abs(want));
    }
  };
  const tensor x = tensor::from_values<float>({rows, width}, xs);
  check(run_op("Gelu", {x}, {.opset = 20, .threads = 2}), false);
  check(run_op("BiasGelu", {x, tensor::from_values<float>({width}, bias)}, {.threads = 2, .domain = "com.microsoft"}), true);
}

TEST_CASE("opsets before 7 broadcast B only when asked, aligned at axis", "[runtime][elementwise]") {
  const tensor a = tensor::from_values<float>({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  const tensor b = tensor::from_values<float>({3}, {10, 20, 30});
  const tensor y = run_op(
      "Add", {a, b},
      {.attributes = attrs(ir::attribute::make_int("broadcast", 1), ir::attribute::make_int("axis", 1)), .opset = 6});
  CHECK(values_of<float>(y) == std::vector<float>{10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31});
  REQUIRE_THROWS_WITH(run_op("Add", {a, b}, {.opset = 6}), Catch::Contains("'broadcast' is not set"));
}

TEST_CASE("float16 sums accumulate in float and round once", "[runtime][elementwise]") {
  // 2048 + 1 + 1 in float16 steps is 2048 (each +1 is a tie rounding to even); exactly 2050.
  const tensor y = run_op("Sum", {half_tensor({2048}), half_tensor({1}), half_tensor({1})});
  CHECK(y.to_float() == std::vector<float>{2050});
}

TEST_CASE("Clip leaves an omitted bound open", "[runtime][elementwise]") {
  const tensor x = tensor::from_values<float>({4}, {-5, -1, 1, std::numeric_limits<float>::infinity()});
  const tensor lo = tensor::from_values<float>({}, {-2});
  CHECK(values_of<float>(run_op("Clip", {x, lo}, {.opset = 13})) ==
        std::vector<float>{-2, -1, 1, std::numeric_limits<float>::infinity()});
}

TEST_CASE("Where broadcasts its condition and both branches", "[runtime][elementwise]") {
  const tensor cond = bool_tensor({2, 1}, {1, 0});
  const tensor x = tensor::from_values<std::int64_t>({3}, {1, 2, 3});
  const tensor y = tensor::from_values<std::int64_t>({}, {-1});
  const tensor out = run_op("Where", {cond, x, y});
  CHECK(out.shape() == runtime::shape_t{2, 3});
  CHECK(values_of<std::int64_t>(out) == std::vector<std::int64_t>{1, 2, 3, -1, -1, -1});
}

TEST_CASE("Where with a full condition and one branch a single value selects element by element", "[runtime][elementwise]") {
  // The guard torch's attention exports put after Softmax: Where(IsNaN(p), 0, p), the 0 one value.
  const std::int64_t n = 2 * 1024 + 37;  // a partial block at the end
  std::vector<std::uint8_t> flags(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) flags[static_cast<std::size_t>(i)] = i % 3 == 0;
  const tensor cond = bool_tensor({n}, flags);
  const std::vector<float> full = iota_values(n, 3.0f);
  const tensor many = tensor::from_values<float>({n}, full);
  const tensor one = tensor::from_values<float>({}, {-7.0f});
  const std::vector<float> one_first = values_of<float>(run_op("Where", {cond, one, many}));
  const std::vector<float> one_second = values_of<float>(run_op("Where", {cond, many, one}));
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    bad += one_first[k] != (flags[k] ? -7.0f : full[k]);
    bad += one_second[k] != (flags[k] ? full[k] : -7.0f);
  }
  CHECK(bad == 0);
}

TEST_CASE("IsNaN marks exactly the NaN entries of a float tensor", "[runtime][elementwise]") {
  const std::int64_t n = 3 * 1024 + 5;
  std::vector<float> x = iota_values(n, 1e30f);
  for (std::int64_t i = 0; i < n; i += 11) x[static_cast<std::size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -std::numeric_limits<float>::infinity();
  const std::vector<std::uint8_t> marks = values_of<std::uint8_t>(run_op("IsNaN", {tensor::from_values<float>({n}, x)}));
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) bad += marks[static_cast<std::size_t>(i)] != (i % 11 == 0 ? 1 : 0);
  CHECK(bad == 0);
}

TEST_CASE("Dropout is the identity at inference and refuses random training", "[runtime][elementwise]") {
  const tensor x = tensor::from_values<float>({3}, {1, 2, 3});
  const tensor ratio = tensor::from_values<float>({}, {0.5f});
  SECTION("inference, with its mask") {
    const auto out = run_op_outputs("Dropout", {x}, {.opset = 13}, 2);
    CHECK(values_of<float>(out[0]) == std::vector<float>{1, 2, 3});
    CHECK(values_of<std::uint8_t>(out[1]) == std::vector<std::uint8_t>{1, 1, 1});
  }
  SECTION("training with a ratio of zero is still the identity") {
    const tensor zero = tensor::from_values<float>({}, {0.0f});
    CHECK(values_of<float>(run_op("Dropout", {x, zero, bool_tensor({}, {1})}, {.opset = 13})) ==
          std::vector<float>{1, 2, 3});
  }
  SECTION("training with a non-zero ratio is unsupported") {
    try {
      run_op("Dropout", {x, ratio, bool_tensor({}, {1})}, {.opset = 13});
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::unsupported);
    }
  }
}
