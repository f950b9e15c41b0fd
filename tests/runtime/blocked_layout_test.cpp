// The session's blocked channel layout (src/runtime/blocked_layout.hpp) against the same
// graph run in its model's layout (session_options::rewrite_graph = false): convolutions of
// every form oneDNN takes (dense, 1x1, grouped, depthwise, strided, dilated, padded, channel
// counts off the block, a 3-channel stem, 8 channels per group, FusedConv with Z and each
// activation), pools,
// elementwise chains, swish, squeeze-excitation, graph outputs inside a blocked chain, and
// input shapes that change between runs. Where the CPU or build has no blocked layout both
// sides run the plain kernels and the checks still hold.
//
// Tolerance: both sides sum the same float32 products in different orders (oneDNN's kernels
// against the packed GEMM, Winograd or the direct depthwise loop), and oneDNN's tanh, logistic
// and swish are its own polynomial fits: 1e-4 * (1 + |expected|) is far above either.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/conv_attributes.hpp"
#include "support/ops_run.hpp"
#include "support/random_values.hpp"
#include "support/static_shape.hpp"
#include "support/tensor_compare.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::contains;
using test::ops_run;
using test::static_shape;

using test::random_values;

ir::model opset17_model(const std::string& name) {
  ir::model m = ir::make_model(name);
  m.opsets.push_back({"com.microsoft", 1});
  return m;
}

runtime::tensor_map run(const ir::model& m, const runtime::tensor_map& feeds, bool blocked, int threads = 1) {
  runtime::session s(m, runtime::session_options{.threads = threads, .rewrite_graph = blocked});
  return s.run(feeds);
}

/// Every output of `m` equal with and without the blocked layout.
void check_same_outputs(const ir::model& m, const runtime::tensor_map& feeds, int threads = 1) {
  const runtime::tensor_map blocked = run(m, feeds, true, threads), plain = run(m, feeds, false, threads);
  REQUIRE(blocked.size() == plain.size());
  for (const auto& [name, want] : plain) {
    INFO("output " << name);
    CHECK(test::compare_tensors(blocked.at(name), want, 1e-4, 1e-4) == "");
  }
}

/// Conv of `x` (c channels) to m channels, k x k, "same" padding, seeded weights and bias; the
/// builder's own conv needs static shapes, which pools and dynamic inputs do not give it.
ir::value* conv(ir::graph_builder& gb, ir::value* x, std::int64_t c, std::int64_t m, std::int64_t k = 1,
                std::int64_t group = 1, std::int64_t stride = 1) {
  static std::uint32_t seed = 100;
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", {k, k}));
  attrs.push_back(ir::attribute::make_ints("strides", {stride, stride}));
  attrs.push_back(ir::attribute::make_ints("pads", {k / 2, k / 2, k / 2, k / 2}));
  attrs.push_back(ir::attribute::make_int("group", group));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c / group * k * k));
  ir::value* w = gb.constant("w", {m, c / group, k, k}, random_values(static_cast<std::size_t>(m * c / group * k * k), ++seed, scale));
  ir::value* b = gb.constant("b", {m}, random_values(static_cast<std::size_t>(m), ++seed, 0.1f));
  return gb.op("Conv", {x, w, b}, std::move(attrs));
}

struct conv_case {
  std::int64_t c, h, m, k, group, stride, pad, dilation;
};

std::vector<ir::attribute> conv_attributes(const conv_case& p) {
  return test::square_conv_attributes(p.k, p.stride, p.pad, p.dilation, p.group);
}

std::int64_t out_dim(const conv_case& p) { return (p.h + 2 * p.pad - p.dilation * (p.k - 1) - 1) / p.stride + 1; }

const std::vector<conv_case>& conv_cases() {
  static const std::vector<conv_case> all{
      {16, 12, 32, 3, 1, 1, 1, 1},    // dense 3x3
      {20, 9, 24, 1, 1, 1, 0, 1},     // 1x1, channels off the block
      {3, 15, 16, 7, 1, 2, 3, 1},     // stem: 3 channels, read in NCHW
      {32, 10, 32, 3, 32, 1, 1, 1},   // depthwise
      {24, 11, 24, 5, 24, 2, 2, 1},   // depthwise 5x5, strided
      {32, 8, 48, 3, 2, 1, 1, 1},     // grouped
      {48, 9, 48, 3, 6, 2, 1, 1},     // 8 channels per group (RegNet): blocks of 8 on AVX-512 too
      {16, 13, 16, 3, 1, 1, 2, 2},    // dilated
      {40, 7, 8, 3, 1, 2, 0, 1},      // no padding, strided, fewer outputs than a block
  };
  return all;
}

}  // namespace

TEST_CASE("blocked conv computes Conv of every form as the plain kernels do", "[runtime][nchwc]") {
  for (const conv_case& p : conv_cases()) {
    for (int threads : {1, 2}) {
      INFO("c " << p.c << " h " << p.h << " m " << p.m << " k " << p.k << " group " << p.group << " threads " << threads);
      ir::model m = opset17_model("conv");
      ir::graph_builder gb(m.graph());
      const std::vector<std::int64_t> x_dims{2, p.c, p.h, p.h}, w_dims{p.m, p.c / p.group, p.k, p.k};
      ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
      ir::value* w = gb.constant("w", w_dims, random_values(static_cast<std::size_t>(p.m * p.c / p.group * p.k * p.k), 2, 0.5f));
      ir::value* b = gb.constant("b", {p.m}, random_values(static_cast<std::size_t>(p.m), 3));
      gb.output(gb.op("Conv", {x, w, b}, conv_attributes(p)));
      const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(static_cast<std::size_t>(2 * p.c * p.h * p.h), 1))}};
      check_same_outputs(m, feeds, threads);
    }
  }
}

TEST_CASE("blocked conv applies FusedConv's Z and every activation", "[runtime][nchwc]") {
  const std::vector<std::pair<std::string, std::vector<float>>> activations{
      {"", {}}, {"Relu", {}}, {"LeakyRelu", {0.1f}}, {"Tanh", {}}, {"Sigmoid", {}},
      {"Clip", {-0.5f, 0.7f}}, {"HardSigmoid", {0.3f, 0.4f}}, {"HardSwish", {}}};
  const conv_case p{20, 9, 24, 3, 1, 1, 1, 1};
  const std::vector<std::int64_t> x_dims{1, p.c, p.h, p.h}, y_dims{1, p.m, p.h, p.h};
  for (const auto& [name, params] : activations) {
    INFO("activation " << name);
    ir::model m = opset17_model("fused");
    ir::graph_builder gb(m.graph());
    ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
    // Z comes from a blocked conv, as a residual branch does.
    ir::value* z = gb.op("Conv", {x, gb.constant("wz", {p.m, p.c, 1, 1}, random_values(static_cast<std::size_t>(p.m * p.c), 5))},
                         {});
    std::vector<ir::attribute> attrs = conv_attributes(p);
    if (!name.empty()) attrs.push_back(ir::attribute::make_string("activation", name));
    if (!params.empty()) attrs.push_back(ir::attribute::make_floats("activation_params", params));
    ir::value* w = gb.constant("w", {p.m, p.c, p.k, p.k}, random_values(static_cast<std::size_t>(p.m * p.c * p.k * p.k), 2, 0.3f));
    ir::value* b = gb.constant("b", {p.m}, random_values(static_cast<std::size_t>(p.m), 3));
    ir::node* fused = m.graph().add_node(ir::node_spec{"FusedConv", {x, w, b, z}, {"y"}, std::move(attrs), "fused", "com.microsoft"});
    gb.output(fused->output(0));
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(static_cast<std::size_t>(p.c * p.h * p.h), 1))}};
    check_same_outputs(m, feeds);
  }
}

TEST_CASE("a blocked conv writes over a residual that dies there, and only then", "[runtime][nchwc]") {
  // x -> z = Conv(x); y = FusedConv(x, w, b, z) with Relu; `z_read_later` also outputs Relu(z)
  // after y, so z lives on and y must not take its memory. Planned runs (the second on) place
  // y over a dying z: the arena is then below the bytes live at that step without it.
  const std::vector<std::int64_t> x_dims{1, 16, 10, 10}, y_dims{1, 32, 10, 10};
  for (bool z_read_later : {false, true}) {
    INFO("z read later " << z_read_later);
    ir::model m = opset17_model("residual");
    ir::graph_builder gb(m.graph());
    ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
    ir::value* z = conv(gb, x, 16, 32);
    std::vector<ir::attribute> attrs = test::square_conv_attributes(3, 1, 1, 1, 1);
    attrs.push_back(ir::attribute::make_string("activation", "Relu"));
    ir::value* w = gb.constant("w", {32, 16, 3, 3}, random_values(32 * 16 * 9, 2, 0.2f));
    ir::value* b = gb.constant("b", {32}, random_values(32, 3));
    ir::node* fused = m.graph().add_node(ir::node_spec{"FusedConv", {x, w, b, z}, {"y"}, std::move(attrs), "fused", "com.microsoft"});
    gb.output(fused->output(0));
    if (z_read_later) gb.output(gb.op("Relu", {z}));
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(16 * 100, 1))}};
    const runtime::tensor_map want = run(m, feeds, false);
    runtime::session blocked(m, runtime::session_options{.threads = 2, .rewrite_graph = true});
    for (int round = 0; round < 3; ++round) {
      const runtime::tensor_map got = blocked.run(feeds);
      for (const auto& [name, expected] : want) CHECK(test::compare_tensors(got.at(name), expected, 1e-4, 1e-4) == "");
    }
    const runtime::memory_plan_info plan = blocked.memory_plan();
    REQUIRE(plan.active);
    if (runtime::blocked_layout_block() > 0) CHECK((plan.arena_bytes < plan.lower_bound_bytes) == !z_read_later);
  }
}

TEST_CASE("a blocked chain keeps pools, elementwise ops, swish and squeeze-excitation blocked", "[runtime][nchwc]") {
  ir::model m = opset17_model("chain");
  ir::graph_builder gb(m.graph(), 7);
  const std::vector<std::int64_t> x_dims{2, 3, 23, 23};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* stem = gb.relu(conv(gb, x, 3, 24, 3, 1, 2));
  std::vector<ir::attribute> pool;
  pool.push_back(ir::attribute::make_ints("kernel_shape", {3, 3}));
  pool.push_back(ir::attribute::make_ints("strides", {2, 2}));
  pool.push_back(ir::attribute::make_int("ceil_mode", 1));
  ir::value* pooled = gb.op("MaxPool", {stem}, std::move(pool));
  ir::value* expanded = conv(gb, pooled, 24, 40);
  ir::value* swish = gb.mul(expanded, gb.sigmoid(expanded));  // SiLU, folded into the conv
  ir::value* depthwise = conv(gb, swish, 40, 40, 3, 40);
  // Squeeze-excitation: the per-channel scale stays blocked and broadcasts over H and W.
  ir::value* squeezed = gb.relu(conv(gb, gb.op("GlobalAveragePool", {depthwise}), 40, 10));
  std::vector<ir::attribute> hard_sigmoid;
  hard_sigmoid.push_back(ir::attribute::make_float("alpha", 0.2f));
  ir::value* scale = gb.op("HardSigmoid", {conv(gb, squeezed, 10, 40)}, std::move(hard_sigmoid));
  ir::value* excited = gb.mul(depthwise, scale);
  gb.output(excited);  // a graph output inside the chain: read back in NCHW, chain goes on
  ir::value* projected = conv(gb, excited, 40, 24);
  ir::value* residual = gb.add(projected, gb.clip(pooled, -0.5f, 0.5f));
  std::vector<ir::attribute> average;
  average.push_back(ir::attribute::make_ints("kernel_shape", {2, 2}));
  average.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::value* averaged = gb.op("AveragePool", {residual}, std::move(average));
  gb.output(gb.op("Flatten", {gb.op("GlobalAveragePool", {averaged})}));
  const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(2 * 3 * 23 * 23, 1))}};
  check_same_outputs(m, feeds);
  check_same_outputs(m, feeds, 2);
  if (runtime::blocked_layout_block() > 0) {
    const std::vector<std::string> ops = ops_run(m, feeds);
    CHECK(contains(ops, "inferopt.nchwc.Conv"));
    CHECK(contains(ops, "inferopt.nchwc.MaxPool"));
    CHECK(contains(ops, "inferopt.nchwc.GlobalAveragePool"));
    CHECK(contains(ops, "inferopt.nchwc.ChannelScale"));
    CHECK(!contains(ops, "Sigmoid"));  // the swish runs in the conv
    CHECK(!contains(ops, "Conv"));
  }
}

TEST_CASE("blocked squeeze-excitation matches plain on planes of every size", "[runtime][nchwc]") {
  // GlobalAveragePool sums a plane four positions at a time: planes of 1, 3, 4, 5, 15 and 49
  // positions cover the remainders; 24 channels leave the last block half full.
  for (const auto& [h, w] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {1, 3}, {2, 2}, {1, 5}, {3, 5}, {7, 7}}) {
    INFO("plane " << h << "x" << w);
    ir::model m = opset17_model("se");
    ir::graph_builder gb(m.graph(), 11);
    const std::vector<std::int64_t> x_dims{2, 24, h, w};
    ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
    ir::value* y = conv(gb, x, 24, 24, 3);
    ir::value* scale = gb.sigmoid(conv(gb, gb.relu(conv(gb, gb.op("GlobalAveragePool", {y}), 24, 8)), 8, 24));
    gb.output(conv(gb, gb.mul(y, scale), 24, 16));
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(static_cast<std::size_t>(2 * 24 * h * w), 4))}};
    check_same_outputs(m, feeds);
    check_same_outputs(m, feeds, 2);
    if (runtime::blocked_layout_block() > 0) {
      const std::vector<std::string> ops = ops_run(m, feeds);
      CHECK(contains(ops, "inferopt.nchwc.GlobalAveragePool"));
      CHECK(contains(ops, "inferopt.nchwc.ChannelScale"));
    }
  }
}

TEST_CASE("blocked conv's swish is x * sigmoid(x) to float precision from -100 to 100", "[runtime][nchwc]") {
  // An identity 1x1 conv, so the swish sees exactly the fed values: the rational fit's range
  // [-9, 15.7], both of its cut-offs, and beyond them, against double at 1 and 2 threads. The
  // fit is good to about 1e-7 absolute (a few ulp of 0.5), not relative: at x = -8 that is
  // 1e-4 of sigmoid's 3e-4, hence the bound's |x| term.
  constexpr std::int64_t channels = 16, height = 64, width = 64;
  ir::model m = opset17_model("swish");
  ir::graph_builder gb(m.graph());
  const std::vector<std::int64_t> x_dims{1, channels, height, width};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  std::vector<float> identity(channels * channels, 0.0f);
  for (std::int64_t c = 0; c < channels; ++c) identity[static_cast<std::size_t>(c * channels + c)] = 1.0f;
  ir::value* y = gb.op("Conv", {x, gb.constant("w", {channels, channels, 1, 1}, identity)}, {});
  gb.output(gb.mul(y, gb.sigmoid(y)));
  std::vector<float> values(static_cast<std::size_t>(channels * height * width));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = -100.0f + 200.0f * static_cast<float>(i) / static_cast<float>(values.size());
  for (const float edge : {-9.0f, -8.999f, -9.001f, 15.7243834f, 15.64377f, 0.0f, -0.0f, 1e-30f, -87.5f}) values[values.size() / 2 + static_cast<std::size_t>(edge)] = edge;
  const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, values)}};
  for (int threads : {1, 2}) {
    const tensor out = run(m, feeds, true, threads).begin()->second;
    const float* got = out.data<float>();
    int worst = -1;
    double worst_excess = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i], want = v / (1.0 + std::exp(-v));
      const double excess = std::abs(got[i] - want) - (1e-6 * std::abs(want) + 2e-7 * std::abs(v));
      if (excess > worst_excess) worst_excess = excess, worst = static_cast<int>(i);
    }
    INFO("threads " << threads << " worst at x = " << (worst < 0 ? 0.0f : values[static_cast<std::size_t>(worst)]));
    CHECK(worst < 0);
  }
  if (runtime::blocked_layout_block() > 0) CHECK(!contains(ops_run(m, feeds), "Sigmoid"));
}

TEST_CASE("blocked conv follows input shapes that change between runs", "[runtime][nchwc]") {
  ir::model m = opset17_model("dynamic");
  ir::graph_builder gb(m.graph(), 3);
  ir::shape dims{ir::dim{"batch"}, ir::dim{16}, ir::dim{"height"}, ir::dim{"width"}};
  ir::value* x = gb.input("x", ir::data_type::float32, dims);
  gb.output(gb.relu(conv(gb, gb.relu(conv(gb, x, 16, 32, 3)), 32, 16, 3, 1, 2)));
  runtime::session blocked(m, runtime::session_options{.threads = 1});
  runtime::session plain(m, runtime::session_options{.threads = 1, .rewrite_graph = false});
  // More shapes than a kernel keeps primitives for, then the first again.
  const std::vector<std::vector<std::int64_t>> shapes{{1, 16, 9, 9}, {2, 16, 6, 11}, {1, 16, 17, 5}, {3, 16, 4, 4}, {1, 16, 8, 8}, {1, 16, 9, 9}};
  for (const auto& shape : shapes) {
    INFO("shape " << shape[0] << "x" << shape[2] << "x" << shape[3]);
    const auto values = random_values(static_cast<std::size_t>(shape[0] * 16 * shape[2] * shape[3]), 4);
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>(shape, values)}};
    CHECK(test::compare_tensors(blocked.run(feeds).begin()->second, plain.run(feeds).begin()->second, 1e-4, 1e-4) == "");
  }
}

TEST_CASE("a session holds blocked conv weights once: it releases the initializers after the first run",
          "[runtime][nchwc]") {
  ir::model m = opset17_model("released");
  ir::graph_builder gb(m.graph(), 3);
  ir::shape dims{ir::dim{1}, ir::dim{16}, ir::dim{"height"}, ir::dim{"width"}};
  ir::value* x = gb.input("x", ir::data_type::float32, dims);
  gb.output(gb.relu(conv(gb, gb.relu(conv(gb, x, 16, 32, 3)), 32, 16, 3, 1, 2)));
  std::vector<const ir::tensor*> weights;
  for (const ir::value* v : m.graph().initializers()) {
    if (v->initializer()->dims.size() == 4) weights.push_back(v->initializer());
  }
  REQUIRE(weights.size() == 2);
  runtime::session blocked(m, runtime::session_options{.threads = 1});
  runtime::session plain(m, runtime::session_options{.threads = 1, .rewrite_graph = false});
  // Before a run the session shares each weight (its graph copy and its constant slot).
  for (const ir::tensor* w : weights) CHECK(w->bytes.use_count() > 1);
  for (std::int64_t h : {9, 5, 12}) {
    INFO("height " << h);
    const auto values = random_values(static_cast<std::size_t>(16 * h * 7), 4);
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>({1, 16, h, 7}, values)}};
    CHECK(test::compare_tensors(blocked.run(feeds).begin()->second, plain.run(feeds).begin()->second, 1e-4, 1e-4) == "");
    if (runtime::blocked_layout_block() > 0) {
      // Only the model and the plain session still hold them; new shapes reorder from the kernels' copies.
      for (const ir::tensor* w : weights) CHECK(w->bytes.use_count() == 3);
    }
  }
}

TEST_CASE("an observer and the per-node profile see the model's values and node names", "[runtime][nchwc]") {
  ir::model m = opset17_model("observed");
  ir::graph_builder gb(m.graph(), 5);
  const std::vector<std::int64_t> x_dims{1, 8, 6, 6};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* y = gb.conv(x, 20, {.kernel = 3}, "first_conv");
  gb.output(gb.relu(gb.conv(y, 20, {.kernel = 3})));
  const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(8 * 36, 2))}};

  runtime::shape_t seen;
  runtime::session observed(m, runtime::session_options{.threads = 1, .on_value = [&](std::string_view name, const tensor& t) {
                                                          if (name == y->name()) seen = t.shape();
                                                        }});
  observed.run(feeds);
  CHECK(seen == runtime::shape_t{1, 20, 6, 6});

  runtime::session profiled(m, runtime::session_options{.threads = 1});
  profiled.set_profiling(true);
  profiled.run(feeds);
  CHECK(profiled.node_profile().count(y->producer()->label()) == 1);
}

TEST_CASE("a channels-last block reads and writes blocked activations through its transposes", "[runtime][nchwc]") {
  // ConvNeXt's block: depthwise 7x7, NCHW -> NHWC, LayerNorm, MLP, NHWC -> NCHW, layer scale
  // (one constant per channel), residual Add.
  constexpr std::int64_t c = 24, hidden = 48;
  ir::model m = opset17_model("channels_last");
  ir::graph_builder gb(m.graph(), 9);
  const std::vector<std::int64_t> x_dims{2, c, 9, 9};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* mixed = conv(gb, x, c, c, 7, c);
  std::vector<ir::attribute> to_last;
  to_last.push_back(ir::attribute::make_ints("perm", {0, 2, 3, 1}));
  ir::value* last = gb.op("Transpose", {mixed}, std::move(to_last));
  std::vector<ir::attribute> norm;
  norm.push_back(ir::attribute::make_int("axis", -1));
  ir::value* normed = gb.op("LayerNormalization", {last, gb.constant("gamma", {c}, random_values(c, 11)),
                                                   gb.constant("beta", {c}, random_values(c, 12))}, std::move(norm));
  ir::value* up = gb.op("Relu", {gb.op("MatMul", {normed, gb.constant("w1", {c, hidden}, random_values(c * hidden, 13, 0.3f))})});
  ir::value* down = gb.op("MatMul", {up, gb.constant("w2", {hidden, c}, random_values(hidden * c, 14, 0.2f))});
  std::vector<ir::attribute> to_first;
  to_first.push_back(ir::attribute::make_ints("perm", {0, 3, 1, 2}));
  ir::value* first = gb.op("Transpose", {down}, std::move(to_first));
  ir::value* scaled = gb.mul(gb.constant("layer_scale", {c, 1, 1}, random_values(c, 15)), first);
  ir::value* block = gb.add(scaled, x);
  gb.output(conv(gb, block, c, 8, 3));
  ir::infer_shapes(m);  // the NHWC -> NCHW transpose is converted where its channel count is known
  const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(2 * c * 81, 16))}};
  check_same_outputs(m, feeds);
  check_same_outputs(m, feeds, 2);
  if (runtime::blocked_layout_block() > 0) {
    const std::vector<std::string> ops = ops_run(m, feeds);
    CHECK(!contains(ops, "Transpose"));
    CHECK(contains(ops, "Mul"));  // the layer scale, on blocked activations
  }
}

TEST_CASE("blocked conv takes weights fed in place of their initializer", "[runtime][nchwc]") {
  // Models of IR version 3 list every initializer as a graph input, which a feed may override.
  ir::model m = opset17_model("overridable");
  ir::graph_builder gb(m.graph(), 4);
  const std::vector<std::int64_t> x_dims{1, 16, 7, 7}, w_dims{24, 16, 3, 3};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* w = gb.input("w", ir::data_type::float32, static_shape(w_dims));
  const std::vector<float> initial = random_values(24 * 16 * 9, 5, 0.3f), fed = random_values(24 * 16 * 9, 6, 0.3f);
  m.graph().set_initializer(w, ir::tensor::from_values<float>("w", w_dims, initial));
  gb.output(gb.op("Relu", {gb.op("Conv", {x, w}, conv_attributes({16, 7, 24, 3, 1, 1, 1, 1}))}));
  const tensor xs = tensor::from_values<float>(x_dims, random_values(16 * 49, 7));
  check_same_outputs(m, {{"x", xs}});
  check_same_outputs(m, {{"x", xs}, {"w", tensor::from_values<float>(w_dims, fed)}});
  const runtime::tensor_map with_initial = run(m, {{"x", xs}}, true), with_fed = run(m, {{"x", xs}, {"w", tensor::from_values<float>(w_dims, fed)}}, true);
  CHECK(test::compare_tensors(with_initial.begin()->second, with_fed.begin()->second, 1e-4, 1e-4) != "");
}

TEST_CASE("a model that uses the executor's own ops is refused", "[runtime][nchwc]") {
  for (const char* domain : {"inferopt.nchwc", "inferopt.cpu"}) {
    ir::model m = opset17_model("internal");
    m.opsets.push_back({domain, 1});
    ir::graph_builder gb(m.graph());
    ir::value* x = gb.input("x", ir::data_type::float32, static_shape({1, 3, 4, 4, 16}));
    gb.output(m.graph().add_node(ir::node_spec{"ReorderOutput", {x}, {"y"}, {}, "", domain})->output(0));
    CHECK_THROWS_WITH(runtime::session(m), Catch::Contains("is the executor's own"));
  }
}

TEST_CASE("a blocked region without convolutions still runs (transpose into elementwise ops)", "[runtime][nchwc]") {
  // The random-graph differential test found it: a Transpose to NCHW read by elementwise ops
  // became blocked with no conv in the graph.
  ir::model m = opset17_model("no_conv");
  ir::graph_builder gb(m.graph(), 2);
  const std::vector<std::int64_t> x_dims{2, 5, 6, 20};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  std::vector<ir::attribute> perm;
  perm.push_back(ir::attribute::make_ints("perm", {0, 3, 1, 2}));
  ir::value* first = gb.op("Transpose", {x}, std::move(perm));
  gb.output(gb.add(gb.relu(first), gb.sigmoid(first)));
  ir::infer_shapes(m);
  check_same_outputs(m, {{"x", tensor::from_values<float>(x_dims, random_values(2 * 5 * 6 * 20, 3))}});
}

TEST_CASE("a padded 1x1 conv after a global pool is no per-channel scale", "[runtime][nchwc]") {
  // A 1x1 conv with padding turns a 1x1 map into a larger one: what it feeds into is no
  // squeeze-excitation scale, and a Mul with it must broadcast as written.
  ir::model m = opset17_model("padded_one_by_one");
  ir::graph_builder gb(m.graph(), 6);
  const std::vector<std::int64_t> x_dims{1, 16, 3, 3};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* pooled = gb.op("GlobalAveragePool", {conv(gb, x, 16, 16, 3)});
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", {1, 1}));
  attrs.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::value* grown = gb.op("Conv", {pooled, gb.constant("wg", {16, 16, 1, 1}, random_values(256, 8, 0.25f))}, std::move(attrs));
  gb.output(gb.mul(conv(gb, x, 16, 16, 3), grown));
  check_same_outputs(m, {{"x", tensor::from_values<float>(x_dims, random_values(16 * 9, 9))}});
}

namespace {

std::vector<ir::attribute> only(ir::attribute a) {
  std::vector<ir::attribute> list;
  list.push_back(std::move(a));
  return list;
}

/// BatchNormalization of `x` (c channels) with seeded parameters, variances in [0.5, 1.5].
ir::value* batch_norm(ir::graph_builder& gb, ir::value* x, std::int64_t c, std::uint32_t seed) {
  std::vector<float> var = random_values(static_cast<std::size_t>(c), seed, 0.5f);
  for (float& v : var) v += 1.0f;
  ir::value* scale = gb.constant("scale", {c}, random_values(static_cast<std::size_t>(c), seed + 1));
  ir::value* bias = gb.constant("bias", {c}, random_values(static_cast<std::size_t>(c), seed + 2));
  ir::value* mean = gb.constant("mean", {c}, random_values(static_cast<std::size_t>(c), seed + 3));
  return gb.op("BatchNormalization", {x, scale, bias, mean, gb.constant("var", {c}, var)},
               only(ir::attribute::make_float("epsilon", 1e-3f)));
}

}  // namespace

TEST_CASE("a DenseNet block keeps its concatenations, batch norms and relus blocked", "[runtime][nchwc]") {
  // Growths of 8 and 12 on blocks of 16 (or 8) start inputs inside a block and across its
  // edge; a norm whose output is also a graph output keeps its Relu apart.
  for (const std::int64_t growth : {8, 12}) {
    INFO("growth " << growth);
    ir::model m = opset17_model("dense");
    ir::graph_builder gb(m.graph(), 13);
    const std::vector<std::int64_t> x_dims{2, 3, 17, 17};
    ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
    std::vector<ir::value*> features{conv(gb, x, 3, 16, 3, 1, 2)};
    std::int64_t channels = 16;
    for (int layer = 0; layer < 3; ++layer) {
      ir::value* joined = features.size() == 1 ? features[0] : gb.op("Concat", features, only(ir::attribute::make_int("axis", 1)));
      ir::value* normed = batch_norm(gb, joined, channels, 40 + 4 * static_cast<std::uint32_t>(layer));
      if (layer == 1) gb.output(normed);
      ir::value* bottleneck = gb.relu(conv(gb, gb.relu(normed), channels, 16));
      features.push_back(conv(gb, bottleneck, 16, growth, 3));
      channels += growth;
    }
    ir::value* joined = gb.op("Concat", features, only(ir::attribute::make_int("axis", 1)));
    gb.output(gb.op("GlobalAveragePool", {gb.relu(batch_norm(gb, joined, channels, 80))}));
    const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(2 * 3 * 17 * 17, 6))}};
    check_same_outputs(m, feeds);
    check_same_outputs(m, feeds, 2);
    if (runtime::blocked_layout_block() > 0) {
      const std::vector<std::string> ops = ops_run(m, feeds);
      CHECK(contains(ops, "inferopt.nchwc.GatherChannels"));
      CHECK(contains(ops, "inferopt.nchwc.ChannelScale"));
      CHECK(!contains(ops, "Concat"));
      CHECK(!contains(ops, "BatchNormalization"));
      CHECK(!contains(ops, "inferopt.nchwc.ReorderInput"));  // the stem reads NCHW
    }
  }
}

namespace {

/// ShuffleNet's channel shuffle of `x` (c channels, h x h) into 2 groups.
ir::value* channel_shuffle(ir::graph_builder& gb, ir::value* x, std::int64_t c, std::int64_t h) {
  ir::value* grouped = gb.op("Reshape", {x, gb.constant_i64("grouped", {5}, {2, 2, c / 2, h, h})});
  ir::value* swapped = gb.op("Transpose", {grouped}, only(ir::attribute::make_ints("perm", {0, 2, 1, 3, 4})));
  return gb.op("Reshape", {swapped, gb.constant_i64("merged", {4}, {2, c, h, h})});
}

/// The two channel halves of `x` (c channels): two Slices (TorchScript's export of chunk) or
/// one Split (dynamo's).
std::pair<ir::value*, ir::value*> halves(ir::graph_builder& gb, ir::value* x, std::int64_t c, bool split) {
  if (!split) {
    const auto slice = [&](std::int64_t from, std::int64_t to) {
      return gb.op("Slice", {x, gb.constant_i64("starts", {1}, {from}), gb.constant_i64("ends", {1}, {to}),
                             gb.constant_i64("axes", {1}, {1})});
    };
    return {slice(0, c / 2), slice(c / 2, INT64_MAX)};
  }
  ir::graph& g = gb.target();
  ir::node* n = g.add_node(ir::node_spec{"Split", {x, gb.constant_i64("split", {2}, {c / 2, c / 2})},
                                         {g.unique_name("half"), g.unique_name("half")}, only(ir::attribute::make_int("axis", 1)),
                                         g.unique_name("split")});
  return {n->output(0), n->output(1)};
}

}  // namespace

TEST_CASE("a ShuffleNet unit's concatenation, shuffle and chunk run as blocked channel gathers", "[runtime][nchwc]") {
  // Branches of 12 channels leave halves that start inside a block.
  for (const std::int64_t branch : {12, 16}) {
    for (const bool split : {false, true}) {
      INFO("branch " << branch << (split ? " Split" : " Slice"));
      ir::model m = opset17_model("shuffle");
      ir::graph_builder gb(m.graph(), 17);
      const std::vector<std::int64_t> x_dims{2, 3, 16, 16};
      const std::int64_t c = 2 * branch, h = 8;
      ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
      ir::value* stem = gb.relu(conv(gb, x, 3, 24, 3, 1, 2));
      // Down-sampling unit (both branches read the stem), then a unit that splits its input.
      const auto axis1 = [] { return only(ir::attribute::make_int("axis", 1)); };
      ir::value* joined = gb.op("Concat", {conv(gb, stem, 24, branch), gb.relu(conv(gb, stem, 24, branch))}, axis1());
      ir::value* shuffled = channel_shuffle(gb, joined, c, h);
      const auto [kept, worked] = halves(gb, shuffled, c, split);
      ir::value* branch2 = gb.relu(conv(gb, conv(gb, worked, branch, branch, 3, branch), branch, branch));
      ir::value* unit = channel_shuffle(gb, gb.op("Concat", {kept, branch2}, axis1()), c, h);
      gb.output(kept);  // read in NCHW too
      gb.output(conv(gb, unit, c, 8));
      ir::infer_shapes(m);  // the shuffle is recognized by its static shapes
      const runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, random_values(2 * 3 * 16 * 16, 8))}};
      check_same_outputs(m, feeds);
      check_same_outputs(m, feeds, 2);
      if (runtime::blocked_layout_block() > 0) {
        const std::vector<std::string> ops = ops_run(m, feeds);
        CHECK(contains(ops, "inferopt.nchwc.GatherChannels"));
        for (const char* plain : {"Concat", "Transpose", "Reshape", "Slice", "Split", "inferopt.nchwc.ReorderInput"}) {
          INFO(plain);
          CHECK(!contains(ops, plain));
        }
      }
    }
  }
}

namespace {

/// x [1, 16, side, side] (fixed) -> 3x3 conv to 32 -> Relu -> 3x3 conv to 16, "same" padding.
ir::model two_3x3_convs(std::int64_t side) {
  ir::model m = opset17_model("winograd");
  ir::graph_builder gb(m.graph(), 8);
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape({1, 16, side, side}));
  gb.output(conv(gb, gb.relu(conv(gb, x, 16, 32, 3)), 32, 16, 3));
  ir::infer_shapes(m);
  return m;
}

}  // namespace

TEST_CASE("3x3 convs of a fixed shape run the Winograd kernel as the plain ones compute, and report its larger weights",
          "[runtime][nchwc]") {
  const std::size_t direct_weight_bytes = (32 * 16 + 16 * 32) * 9 * sizeof(float), bias_bytes = (32 + 16) * sizeof(float);
  for (std::int64_t side : {8, 16}) {
    for (int threads : {1, 2}) {
      INFO("side " << side << " threads " << threads);
      const ir::model m = two_3x3_convs(side);
      const runtime::tensor_map feeds{
          {"x", tensor::from_values<float>({1, 16, side, side}, random_values(static_cast<std::size_t>(16 * side * side), 9))}};
      runtime::session winograd(m, runtime::session_options{.threads = threads});
      runtime::session direct(m, runtime::session_options{.threads = threads, .winograd = false});
      const tensor plain = run(m, feeds, false, threads).begin()->second;
      CHECK(test::compare_tensors(winograd.run(feeds).begin()->second, plain, 1e-4, 1e-4) == "");
      CHECK(test::compare_tensors(direct.run(feeds).begin()->second, plain, 1e-4, 1e-4) == "");
      if (runtime::blocked_layout_block() == 0) continue;
      // After the first run the kernels hold the weights in their layouts; the session keeps the biases.
      const runtime::weight_memory_info w = winograd.weight_memory(), d = direct.weight_memory();
      CHECK(d.kernel_bytes == direct_weight_bytes);
      CHECK(d.initializer_bytes == bias_bytes);
      CHECK(w.initializer_bytes == bias_bytes);
      // oneDNN's Winograd kernel (AVX-512, blocks of 16) keeps 4x4 transformed taps per 3x3.
      if (runtime::blocked_layout_block() == 16 && side >= 14) CHECK(w.kernel_bytes > d.kernel_bytes);
      else CHECK(w.kernel_bytes == d.kernel_bytes);
    }
  }
}

TEST_CASE("a Winograd conv whose initializer was released refuses, in one line, a batch whose layout it lacks", "[runtime][nchwc]") {
  if (runtime::blocked_layout_block() != 16) {
    WARN("no 16-channel blocked layout on this CPU or build: nothing to check");
    return;
  }
  ir::model m = opset17_model("winograd_kernel");
  m.opsets.push_back({"inferopt.nchwc", 1});
  ir::graph_builder gb(m.graph());
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape({1, 1, 16, 16, 16}));
  ir::value* w = gb.constant("w", {16, 16, 3, 3}, random_values(16 * 16 * 9, 10, 0.2f));
  std::vector<ir::attribute> attrs = test::square_conv_attributes(3, 1, 1, 1, 1);
  attrs.push_back(ir::attribute::make_int("block", 16));
  attrs.push_back(ir::attribute::make_string("algorithm", "winograd"));
  const ir::node& n = *m.graph().add_node(ir::node_spec{"Conv", {x, w}, {"y"}, std::move(attrs), "", "inferopt.nchwc"});
  const runtime::kernel_factory* make = runtime::builtin_kernels().find("inferopt.nchwc", "Conv", 1);
  REQUIRE(make != nullptr);
  const std::unique_ptr<runtime::kernel> k = (*make)(runtime::kernel_build_info{n, 1});
  const tensor weights = tensor::from_ir(*w->initializer());
  const auto compute = [&](std::int64_t batch, const tensor* w_input) {
    const tensor xs = tensor::from_values<float>({batch, 1, 16, 16, 16}, random_values(static_cast<std::size_t>(batch * 4096), 11));
    const std::vector<const tensor*> inputs{&xs, w_input};
    std::vector<tensor> outputs(1);
    runtime::kernel_context ctx(n, inputs, outputs, 1);
    k->compute(ctx);
  };
  // oneDNN lays Winograd weights out per kernel: F(2x2, 3x3) at batch 1, F(4x4, 3x3) above.
  compute(1, &weights);
  REQUIRE(k->holds_own_copy(1));
  CHECK_THROWS_WITH(compute(2, nullptr), Catch::Contains("Winograd weights were laid out for another input shape"));
  compute(4, &weights);  // while the initializer is there, a new layout is reordered from it
  CHECK_NOTHROW(compute(8, nullptr));  // the batch-4 layout serves batch 8
}

TEST_CASE("a session releases weights listed as graph inputs to its kernels' copies, and still takes a feed in their place",
          "[runtime][nchwc]") {
  // Models of IR version 3 list every initializer as a graph input: a default a feed may replace.
  ir::model m = opset17_model("overridable_released");
  ir::graph_builder gb(m.graph(), 4);
  const std::vector<std::int64_t> x_dims{1, 16, 7, 7}, w_dims{24, 16, 3, 3}, v_dims{7, 5};
  ir::value* x = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* w = gb.input("w", ir::data_type::float32, static_shape(w_dims));
  ir::value* v = gb.input("v", ir::data_type::float32, static_shape(v_dims));
  const std::vector<float> initial = random_values(24 * 16 * 9, 5, 0.3f), fed = random_values(24 * 16 * 9, 6, 0.3f);
  const std::vector<float> v_initial = random_values(35, 7), v_fed = random_values(35, 8);
  m.graph().set_initializer(w, ir::tensor::from_values<float>("w", w_dims, initial));
  m.graph().set_initializer(v, ir::tensor::from_values<float>("v", v_dims, v_initial));
  gb.output(gb.op("MatMul", {gb.op("Relu", {gb.op("Conv", {x, w}, conv_attributes({16, 7, 24, 3, 1, 1, 1, 1}))}), v}));
  const tensor xs = tensor::from_values<float>(x_dims, random_values(16 * 49, 7));
  const runtime::tensor_map defaults{{"x", xs}};
  const runtime::tensor_map overridden{{"x", xs}, {"w", tensor::from_values<float>(w_dims, fed)}, {"v", tensor::from_values<float>(v_dims, v_fed)}};
  const tensor want_defaults = run(m, defaults, false).begin()->second, want_overridden = run(m, overridden, false).begin()->second;
  runtime::session s(m, runtime::session_options{.threads = 1});
  const std::size_t held_before = s.weight_memory().initializer_bytes;
  // Defaults, a feed, then the defaults again: the feed must not outlive its run.
  for (const bool feed : {false, true, false, true}) {
    INFO("fed " << feed);
    const tensor got = s.run(feed ? overridden : defaults).begin()->second;
    CHECK(test::compare_tensors(got, feed ? want_overridden : want_defaults, 1e-4, 1e-4) == "");
  }
  if (runtime::blocked_layout_block() > 0) CHECK(s.weight_memory().initializer_bytes < held_before);
}
