// com.microsoft FusedConv and FusedGemm against their unfused definition run through the same
// executor: Conv (+ Add Z) + the activation op, Gemm + the activation op. The cases cover every
// activation FusedConv accepts, with and without bias and Z, on the shapes that take each conv
// path (Winograd 3x3 maps, the packed GEMM with im2col or in place, row- and column-split,
// grouped, strided, depthwise, float64) and FusedGemm across several row blocks.
//
// Tolerance: both sides sum the same float32 products; the fused side adds Z before the
// product instead of after and Winograd reassociates, so they differ by float32 rounding of
// sums of at most a few hundred terms of magnitude <= 1: far below 1e-4 * (1 + |expected|).

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/random_values.hpp"
#include "support/static_shape.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::static_shape;

using test::random_values;

/// An activation as an ONNX op (the reference) and as the fused ops' attributes.
struct activation_case {
  std::string name;  // empty: none
  std::vector<float> params;
};

const std::vector<activation_case>& activations() {
  static const std::vector<activation_case> all{
      {"", {}},          {"Relu", {}},       {"LeakyRelu", {0.1f}},          {"Tanh", {}},
      {"Sigmoid", {}},   {"Clip", {-0.5f, 0.7f}}, {"HardSigmoid", {0.3f, 0.4f}}, {"HardSwish", {}},
  };
  return all;
}

/// Appends the reference op for `a` after `x` (opset 17: Clip's bounds are inputs).
ir::value* reference_activation(ir::graph_builder& gb, const activation_case& a, ir::value* x) {
  if (a.name.empty()) return x;
  std::vector<ir::attribute> attrs;
  std::vector<ir::value*> inputs{x};
  if (a.name == "LeakyRelu") attrs.push_back(ir::attribute::make_float("alpha", a.params[0]));
  if (a.name == "HardSigmoid") {
    attrs.push_back(ir::attribute::make_float("alpha", a.params[0]));
    attrs.push_back(ir::attribute::make_float("beta", a.params[1]));
  }
  if (a.name == "Clip") {
    inputs.push_back(gb.constant("lo", {}, {a.params[0]}));
    inputs.push_back(gb.constant("hi", {}, {a.params[1]}));
  }
  return gb.op(a.name, inputs, std::move(attrs));
}

void add_fused_attributes(std::vector<ir::attribute>& attrs, const activation_case& a, bool gemm_form) {
  if (a.name.empty()) return;
  attrs.push_back(ir::attribute::make_string("activation", a.name));
  if (a.params.empty()) return;
  if (!gemm_form) {
    attrs.push_back(ir::attribute::make_floats("activation_params", a.params));
    return;
  }
  attrs.push_back(ir::attribute::make_float("activation_alpha", a.params[0]));
  if (a.params.size() > 1) attrs.push_back(ir::attribute::make_float("activation_beta", a.params[1]));
}

ir::model fused_model(const std::string& name) {
  ir::model m = ir::make_model(name);
  m.opsets.push_back({"com.microsoft", 1});
  return m;
}

tensor run_one(const ir::model& m, const runtime::tensor_map& feeds, int threads) {
  runtime::session s(m, runtime::session_options{.threads = threads});
  return s.run(feeds).begin()->second;
}

std::size_t mismatches(const tensor& got, const tensor& want) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_float(), w = want.to_float();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!(std::fabs(g[i] - w[i]) <= 1e-4 * (1.0 + std::fabs(w[i])))) ++bad;
  }
  return bad;
}

struct conv_case {
  std::int64_t n, c, h, w, m, k, group, stride, pad;
};

std::int64_t out_dim(std::int64_t in, const conv_case& p) { return (in + 2 * p.pad - p.k) / p.stride + 1; }

std::vector<ir::attribute> conv_attributes(const conv_case& p) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", {p.k, p.k}));
  attrs.push_back(ir::attribute::make_ints("strides", {p.stride, p.stride}));
  attrs.push_back(ir::attribute::make_ints("pads", {p.pad, p.pad, p.pad, p.pad}));
  attrs.push_back(ir::attribute::make_int("group", p.group));
  return attrs;
}

/// FusedConv and its reference on the same data; weights constant or fed.
void check_fused_conv(const conv_case& p, const activation_case& a, bool bias, bool residual, bool constant_weights,
                      int threads) {
  const std::vector<std::int64_t> x_dims{p.n, p.c, p.h, p.w}, w_dims{p.m, p.c / p.group, p.k, p.k};
  const std::vector<std::int64_t> y_dims{p.n, p.m, out_dim(p.h, p), out_dim(p.w, p)};
  const auto x = random_values(static_cast<std::size_t>(p.n * p.c * p.h * p.w), 1);
  const auto w = random_values(static_cast<std::size_t>(w_dims[0] * w_dims[1] * p.k * p.k), 2, 0.5f);
  const auto b = random_values(static_cast<std::size_t>(p.m), 3);
  const auto z = random_values(static_cast<std::size_t>(y_dims[0] * y_dims[1] * y_dims[2] * y_dims[3]), 4, 2.0f);

  auto build = [&](ir::model& m, bool fused) {
    ir::graph_builder gb(m.graph());
    ir::value* xv = gb.input("x", ir::data_type::float32, static_shape(x_dims));
    ir::value* wv = constant_weights ? gb.constant("w", w_dims, w) : gb.input("w", ir::data_type::float32, static_shape(w_dims));
    ir::value* zv = residual ? gb.input("z", ir::data_type::float32, static_shape(y_dims)) : nullptr;
    std::vector<ir::value*> inputs{xv, wv, bias ? gb.constant("b", {p.m}, b) : nullptr};
    std::vector<ir::attribute> attrs = conv_attributes(p);
    if (fused) {
      if (residual) inputs.push_back(zv);
      add_fused_attributes(attrs, a, false);
      if (!residual && !bias) inputs.pop_back();
      gb.output(m.graph().add_node(ir::node_spec{"FusedConv", inputs, {"y"}, std::move(attrs), "fused", "com.microsoft"})->output(0));
      return;
    }
    if (!bias) inputs.pop_back();
    ir::value* y = gb.op("Conv", inputs, std::move(attrs));
    if (residual) y = gb.add(y, zv);
    gb.output(reference_activation(gb, a, y));
  };
  ir::model fused = fused_model("fused"), reference = ir::make_model("reference");
  build(fused, true);
  build(reference, false);
  runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, x)}};
  if (!constant_weights) feeds["w"] = tensor::from_values<float>(w_dims, w);
  if (residual) feeds["z"] = tensor::from_values<float>(y_dims, z);
  CHECK(mismatches(run_one(fused, feeds, threads), run_one(reference, feeds, threads)) == 0);
}

}  // namespace

TEST_CASE("fused conv applies bias, Z and every activation like Conv, Add and the activation op", "[runtime][fused]") {
  // n, c, h, w, m, k, group, stride, pad
  const conv_case p = GENERATE(values<conv_case>({
      {1, 8, 16, 16, 12, 3, 1, 1, 1},   // 256 positions, 3x3 stride 1: Winograd
      {2, 5, 17, 15, 7, 3, 1, 1, 1},    // Winograd with partial tiles, batch 2
      {2, 6, 7, 9, 10, 3, 1, 1, 1},     // 63 positions: packed GEMM over im2col blocks
      {1, 16, 12, 12, 24, 1, 1, 1, 0},  // 1x1: the GEMM reads the input in place
      {1, 8, 40, 40, 16, 1, 1, 1, 0},   // 1600 positions: row-split GEMM on 2 threads
      {1, 32, 7, 7, 64, 3, 1, 1, 1},    // 49 positions, 64 channels: column-split GEMM
      {1, 6, 9, 9, 4, 1, 2, 2, 0},      // 1x1 stride 2, grouped
      {2, 4, 15, 13, 8, 3, 2, 2, 1},    // 3x3 stride 2, grouped
      {1, 8, 14, 14, 8, 3, 8, 1, 1},    // depthwise
      {2, 6, 11, 10, 12, 3, 6, 2, 1},   // depthwise, channel multiplier 2, stride 2
  }));
  const activation_case a = GENERATE(from_range(activations()));
  CAPTURE(p.c, p.h, p.w, p.m, p.k, p.group, p.stride, a.name);
  for (bool bias : {true, false}) {
    for (bool residual : {true, false}) {
      for (int threads : {1, 2}) {
        CAPTURE(bias, residual, threads);
        check_fused_conv(p, a, bias, residual, true, threads);
      }
    }
  }
  SECTION("with weights fed at run time (packed per run, no Winograd)") {
    check_fused_conv(p, a, true, true, false, 1);
  }
}

TEST_CASE("fused conv on float64 applies Z and the activation on the im2col path", "[runtime][fused]") {
  const conv_case p{1, 4, 9, 9, 6, 3, 2, 1, 1};
  const std::vector<std::int64_t> x_dims{1, 4, 9, 9}, w_dims{6, 2, 3, 3}, y_dims{1, 6, 9, 9};
  auto doubles = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const auto x = doubles(random_values(4 * 81, 1)), w = doubles(random_values(6 * 2 * 9, 2));
  const auto z = doubles(random_values(6 * 81, 3));
  auto build = [&](ir::model& m, bool fused) {
    ir::graph_builder gb(m.graph());
    ir::value* xv = gb.input("x", ir::data_type::float64, static_shape(x_dims));
    ir::value* wv = gb.input("w", ir::data_type::float64, static_shape(w_dims));
    ir::value* zv = gb.input("z", ir::data_type::float64, static_shape(y_dims));
    std::vector<ir::attribute> attrs = conv_attributes(p);
    if (fused) {
      attrs.push_back(ir::attribute::make_string("activation", "LeakyRelu"));
      attrs.push_back(ir::attribute::make_floats("activation_params", {0.2f}));
      gb.output(m.graph()
                    .add_node(ir::node_spec{"FusedConv", {xv, wv, nullptr, zv}, {"y"}, std::move(attrs), "fused", "com.microsoft"})
                    ->output(0));
      return;
    }
    gb.output(gb.leaky_relu(gb.add(gb.op("Conv", {xv, wv}, std::move(attrs)), zv), 0.2f));
  };
  ir::model fused = fused_model("fused"), reference = ir::make_model("reference");
  build(fused, true);
  build(reference, false);
  const runtime::tensor_map feeds{{"x", tensor::from_values<double>(x_dims, x)},
                                  {"w", tensor::from_values<double>(w_dims, w)},
                                  {"z", tensor::from_values<double>(y_dims, z)}};
  CHECK(mismatches(run_one(fused, feeds, 1), run_one(reference, feeds, 1)) == 0);
}

TEST_CASE("fused gemm applies its activation like Gemm and the activation op", "[runtime][fused]") {
  struct gemm_case {
    std::int64_t m, k, n;
    bool trans_a, trans_b;
  };
  const gemm_case p = GENERATE(values<gemm_case>({
      {5, 7, 3, false, false},
      {100, 8, 2048, false, true},  // rows in blocks of 32: four blocks, the last one short
      {70, 6, 1500, true, false},   // transposed A read block by block
  }));
  // FusedGemm accepts neither Clip, HardSwish nor no activation.
  const activation_case a = GENERATE(from_range(std::vector<activation_case>{
      {"Relu", {}}, {"LeakyRelu", {0.1f}}, {"Tanh", {}}, {"Sigmoid", {}}, {"HardSigmoid", {0.3f, 0.4f}}}));
  CAPTURE(p.m, p.k, p.n, p.trans_a, a.name);
  const std::vector<std::int64_t> a_dims = p.trans_a ? std::vector<std::int64_t>{p.k, p.m} : std::vector<std::int64_t>{p.m, p.k};
  const std::vector<std::int64_t> b_dims = p.trans_b ? std::vector<std::int64_t>{p.n, p.k} : std::vector<std::int64_t>{p.k, p.n};
  const auto av = random_values(static_cast<std::size_t>(p.m * p.k), 1);
  const auto bv = random_values(static_cast<std::size_t>(p.k * p.n), 2);
  const auto cv = random_values(static_cast<std::size_t>(p.n), 3);
  auto build = [&](ir::model& m, bool fused) {
    ir::graph_builder gb(m.graph());
    ir::value* in = gb.input("a", ir::data_type::float32, static_shape(a_dims));
    std::vector<ir::value*> inputs{in, gb.constant("b", b_dims, bv), gb.constant("c", {p.n}, cv)};
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_int("transA", p.trans_a));
    attrs.push_back(ir::attribute::make_int("transB", p.trans_b));
    attrs.push_back(ir::attribute::make_float("alpha", 0.7f));
    attrs.push_back(ir::attribute::make_float("beta", 1.5f));
    if (fused) {
      add_fused_attributes(attrs, a, true);
      gb.output(m.graph().add_node(ir::node_spec{"FusedGemm", inputs, {"y"}, std::move(attrs), "fused", "com.microsoft"})->output(0));
      return;
    }
    gb.output(reference_activation(gb, a, gb.op("Gemm", inputs, std::move(attrs))));
  };
  ir::model fused = fused_model("fused"), reference = ir::make_model("reference");
  build(fused, true);
  build(reference, false);
  const runtime::tensor_map feeds{{"a", tensor::from_values<float>(a_dims, av)}};
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(mismatches(run_one(fused, feeds, threads), run_one(reference, feeds, threads)) == 0);
  }
}

TEST_CASE("fused ops refuse the activations and parameters onnxruntime refuses", "[runtime][fused]") {
  using row = std::tuple<std::string, std::string, std::vector<float>>;
  const auto [op, activation, params] = GENERATE(table<std::string, std::string, std::vector<float>>({
      row{"FusedConv", "Elu", {}},             // not a fused activation
      row{"FusedConv", "LeakyRelu", {}},       // LeakyRelu needs its alpha
      row{"FusedConv", "Clip", {0.0f}},        // Clip needs min and max
      row{"FusedConv", "HardSigmoid", {0.2f, 0.5f, 1.0f}},
      row{"FusedGemm", "Clip", {}},            // FusedGemm has no Clip
      row{"FusedGemm", "HardSwish", {}},
      row{"FusedGemm", "", {}},                // FusedGemm needs an activation
      row{"FusedGemm", "LeakyRelu", {}},       // without activation_alpha
  }));
  CAPTURE(op, activation, params);
  ir::model m = fused_model("bad");
  ir::graph_builder gb(m.graph());
  const bool conv = op == "FusedConv";
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(conv ? std::vector<std::int64_t>{1, 2, 4, 4} : std::vector<std::int64_t>{2, 3}));
  ir::value* w = conv ? gb.constant("w", {3, 2, 1, 1}, random_values(6, 1)) : gb.constant("w", {3, 4}, random_values(12, 1));
  std::vector<ir::attribute> attrs;
  if (!activation.empty()) attrs.push_back(ir::attribute::make_string("activation", activation));
  if (!params.empty()) attrs.push_back(ir::attribute::make_floats("activation_params", params));
  gb.output(m.graph().add_node(ir::node_spec{op, {x, w}, {"y"}, std::move(attrs), "the_fused", "com.microsoft"})->output(0));
  try {
    runtime::session s(m, runtime::session_options{.threads = 1});
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_model);
    CHECK_THAT(e.what(), Catch::Contains("'the_fused'"));
  }
}

TEST_CASE("fused conv refuses a Z whose shape differs from the output", "[runtime][fused]") {
  ir::model m = fused_model("bad_z");
  ir::graph_builder gb(m.graph());
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape({1, 2, 4, 4}));
  ir::value* z = gb.input("z", ir::data_type::float32, static_shape({1, 3, 1, 1}));  // broadcastable, still refused
  ir::value* w = gb.constant("w", {3, 2, 1, 1}, random_values(6, 1));
  gb.output(m.graph().add_node(ir::node_spec{"FusedConv", {x, w, nullptr, z}, {"y"}, {}, "the_fused", "com.microsoft"})->output(0));
  runtime::session s(m, runtime::session_options{.threads = 1});
  const runtime::tensor_map feeds{{"x", tensor::from_values<float>({1, 2, 4, 4}, random_values(32, 2))},
                                  {"z", tensor::from_values<float>({1, 3, 1, 1}, random_values(3, 3))}};
  try {
    s.run(feeds);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("Z of shape"));
  }
}
