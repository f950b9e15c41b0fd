// The session's int8 kernels for QDQ groups (src/runtime/int8_groups.hpp) against the same
// graph run in float through DequantizeLinear and QuantizeLinear (session_options::
// rewrite_graph = false): convolutions of every form (dense, 1x1, stem, depthwise, grouped,
// dilated, strided, unpadded), uint8 and int8 activations, zero points that are not 0 (the
// padding must read as the zero point), per-tensor and per-channel weight scales, a bias or
// none, a Relu; QLinearAdd and MaxPool groups; chains whose int8 tensors are also graph
// outputs or read by float ops; input shapes that change between runs.
//
// Tolerance: one unit of the int8 output. The float path rounds each product and sum to
// float32 before quantizing, the int8 kernels sum exactly in int32 and requantize in float32,
// so a value near a rounding tie may land on either side; never further.
// Where the build or CPU has no int8 kernels both sides run in float and the checks still hold.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/conv_attributes.hpp"
#include "support/ops_run.hpp"
#include "support/random_values.hpp"
#include "support/static_shape.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::random_values;
using test::contains;
using test::ops_run;
using test::static_shape;

runtime::tensor_map run(const ir::model& m, const runtime::tensor_map& feeds, bool rewrite, int threads = 1) {
  runtime::session s(m, runtime::session_options{.threads = threads, .rewrite_graph = rewrite});
  return s.run(feeds);
}

/// The largest difference between two int8 (or uint8) tensors of one shape, in units.
int max_unit_difference(const tensor& a, const tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  int worst = 0;
  for (std::int64_t i = 0; i < a.element_count(); ++i) {
    const int x = a.dtype() == ir::data_type::uint8 ? a.data<std::uint8_t>()[i] : a.data<std::int8_t>()[i];
    const int y = b.dtype() == ir::data_type::uint8 ? b.data<std::uint8_t>()[i] : b.data<std::int8_t>()[i];
    worst = std::max(worst, std::abs(x - y));
  }
  return worst;
}

/// Every int8 output of `m` within one unit with and without the int8 kernels; float outputs
/// within one unit of `float_step`.
void check_same_outputs(const ir::model& m, const runtime::tensor_map& feeds, int threads = 1, float float_step = 0.0f) {
  const runtime::tensor_map fast = run(m, feeds, true, threads), reference = run(m, feeds, false, threads);
  REQUIRE(fast.size() == reference.size());
  for (const auto& [name, want] : reference) {
    INFO("output " << name);
    const tensor& got = fast.at(name);
    if (want.dtype() == ir::data_type::float32) {
      REQUIRE(got.shape() == want.shape());
      for (std::int64_t i = 0; i < want.element_count(); ++i) {
        REQUIRE(std::abs(got.data<float>()[i] - want.data<float>()[i]) <= float_step * 1.001f);
      }
    } else {
      CHECK(max_unit_difference(got, want) <= 1);
    }
  }
}

/// Builds QDQ graphs: quantized activations, int8 weights and int32 biases as initializers.
class qdq_builder {
 public:
  explicit qdq_builder(ir::model& m) : g_(m.graph()), gb_(m.graph()) {}

  ir::graph_builder& gb() { return gb_; }

  /// QuantizeLinear of `x` with scale `s` and zero point `z` of `type` (uint8 or int8).
  ir::value* quantize(ir::value* x, float s, int z, ir::data_type type) {
    return gb_.op("QuantizeLinear", {x, scalar(s), zero_point(z, type)});
  }

  /// DequantizeLinear of `q` with the same parameters it was quantized with.
  ir::value* dequantize(ir::value* q) {
    const ir::node* quantizer = q->producer();
    return gb_.op("DequantizeLinear", {q, quantizer->input(1), quantizer->input(2)});
  }

  /// DequantizeLinear of seeded int8 weights [m, c/group, k, k] (|w| <= 64, so that CPUs
  /// without VNNI cannot saturate their 16-bit pair sums) with per-channel or one scale.
  ir::value* weights(std::vector<std::int64_t> dims, bool per_channel, std::vector<float>& scales) {
    const std::int64_t count = dims[0] * dims[1] * dims[2] * dims[3];
    std::vector<float> r = random_values(static_cast<std::size_t>(count), ++seed_, 64.0f);
    std::vector<std::int8_t> q(r.size());
    std::transform(r.begin(), r.end(), q.begin(), [](float v) { return static_cast<std::int8_t>(std::lround(v)); });
    scales.assign(per_channel ? static_cast<std::size_t>(dims[0]) : 1, 0.0f);
    for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = 0.002f * static_cast<float>(1 + i % 5);
    ir::value* wq = constant<std::int8_t>("wq", dims, q);
    ir::value* ws = constant<float>("ws", {static_cast<std::int64_t>(scales.size())}, scales);
    ir::value* wz = constant<std::int8_t>("wz", {static_cast<std::int64_t>(scales.size())}, std::vector<std::int8_t>(scales.size(), 0));
    if (!per_channel) {
      ws = scalar(scales[0]);
      wz = constant<std::int8_t>("wz", {}, {0});
    }
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_int("axis", 0));
    return gb_.op("DequantizeLinear", {wq, ws, wz}, std::move(attrs));
  }

  /// DequantizeLinear of a seeded int32 bias in units of x_scale * w_scale.
  ir::value* bias(std::int64_t m, float x_scale, const std::vector<float>& w_scales) {
    const std::vector<float> r = random_values(static_cast<std::size_t>(m), ++seed_, 2000.0f);
    std::vector<std::int32_t> q(r.size());
    std::transform(r.begin(), r.end(), q.begin(), [](float v) { return static_cast<std::int32_t>(std::lround(v)); });
    std::vector<float> scales(static_cast<std::size_t>(m));
    for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = x_scale * w_scales[w_scales.size() == 1 ? 0 : i];
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_int("axis", 0));
    return gb_.op("DequantizeLinear", {constant<std::int32_t>("bq", {m}, q), constant<float>("bs", {m}, scales)}, std::move(attrs));
  }

  ir::value* scalar(float v) { return constant<float>("s", {}, {v}); }

  ir::value* zero_point(int z, ir::data_type type) {
    if (type == ir::data_type::uint8) return constant<std::uint8_t>("z", {}, {static_cast<std::uint8_t>(z)});
    return constant<std::int8_t>("z", {}, {static_cast<std::int8_t>(z)});
  }

  template <class T>
  ir::value* constant(const std::string& base, std::vector<std::int64_t> dims, const std::vector<T>& values) {
    std::string name = g_.unique_name(base);
    return g_.add_initializer(name, ir::tensor::from_values<T>(name, std::move(dims), values));
  }

 private:
  ir::graph& g_;
  ir::graph_builder gb_;
  std::uint32_t seed_ = 40;
};

struct conv_case {
  std::int64_t c, h, m, k, group, stride, pad, dilation;
  ir::data_type type;
  int x_zero, y_zero;
  bool per_channel, bias, relu;
};

std::vector<ir::attribute> conv_attributes(const conv_case& p) {
  return test::square_conv_attributes(p.k, p.stride, p.pad, p.dilation, p.group);
}

constexpr float x_scale = 0.02f;

/// x (float) -> Q -> DQ -> Conv -> [Relu] -> Q: the int8 output is the graph's. x is
/// [2, c, h, h], or [batch, c, h, h] with `symbolic_batch`.
ir::model conv_model(const conv_case& p, bool symbolic_batch = false) {
  ir::model m = ir::make_model("qconv");
  qdq_builder q(m);
  ir::shape x_shape = static_shape({2, p.c, p.h, p.h});
  if (symbolic_batch) x_shape[0] = ir::dim("batch");
  ir::value* x = q.gb().input("x", ir::data_type::float32, x_shape);
  ir::value* xq = q.quantize(x, x_scale, p.x_zero, p.type);
  std::vector<float> w_scales;
  ir::value* w = q.weights({p.m, p.c / p.group, p.k, p.k}, p.per_channel, w_scales);
  std::vector<ir::value*> inputs{q.dequantize(xq), w};
  if (p.bias) inputs.push_back(q.bias(p.m, x_scale, w_scales));
  ir::value* y = q.gb().op("Conv", std::move(inputs), conv_attributes(p));
  if (p.relu) y = q.gb().op("Relu", {y});
  q.gb().output(q.quantize(y, 0.05f, p.y_zero, p.type));
  ir::infer_shapes(m);
  return m;
}

runtime::tensor_map ramp_feed(const std::string& name, std::vector<std::int64_t> dims, std::uint32_t seed) {
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  return {{name, tensor::from_values<float>(dims, random_values(static_cast<std::size_t>(count), seed, 2.0f))}};
}

const std::vector<conv_case>& conv_cases() {
  using ir::data_type;
  static const std::vector<conv_case> all{
      // c   h   m  k  grp s  pad dil type              zx  zy  per_ch bias relu
      {16, 12, 32, 3, 1, 1, 1, 1, data_type::uint8, 0, 0, true, true, true},       // dense 3x3, ResNet's form
      {16, 12, 32, 3, 1, 1, 1, 1, data_type::uint8, 117, 128, true, true, false},  // padding reads the zero point
      {20, 9, 24, 1, 1, 1, 0, 1, data_type::uint8, 3, 7, false, true, true},       // 1x1, one weight scale
      {3, 15, 16, 7, 1, 2, 3, 1, data_type::uint8, 0, 0, true, true, true},        // stem
      {32, 10, 32, 3, 32, 1, 1, 1, data_type::uint8, 9, 0, true, true, true},      // depthwise
      {32, 8, 48, 3, 2, 1, 1, 1, data_type::uint8, 0, 5, true, false, false},      // grouped, no bias
      {16, 13, 16, 3, 1, 1, 2, 2, data_type::uint8, 0, 0, true, true, true},       // dilated
      {40, 7, 8, 3, 1, 2, 0, 1, data_type::uint8, 0, 0, true, true, false},        // unpadded, strided
      {16, 12, 32, 3, 1, 1, 1, 1, data_type::int8, 0, 0, true, true, false},       // int8 activations
      {16, 12, 16, 3, 1, 1, 1, 1, data_type::int8, -5, 3, true, true, true},       // int8, zero points, Relu
  };
  return all;
}

}  // namespace

TEST_CASE("int8 conv groups compute within one unit of the float QDQ path", "[runtime][int8]") {
  for (const conv_case& p : conv_cases()) {
    for (int threads : {1, 2}) {
      INFO("c " << p.c << " h " << p.h << " m " << p.m << " k " << p.k << " group " << p.group << " type "
                << ir::to_string(p.type) << " zx " << p.x_zero << " zy " << p.y_zero << " threads " << threads);
      const ir::model m = conv_model(p);
      check_same_outputs(m, ramp_feed("x", {2, p.c, p.h, p.h}, 1), threads);
      // int8 sources are taken only where the CPU has VNNI (kernels/int8_nhwc.hpp).
      if (runtime::int8_kernels_available() && p.type == ir::data_type::uint8) {
        CHECK(contains(ops_run(m, ramp_feed("x", {2, p.c, p.h, p.h}, 1)), "inferopt.cpu.QLinearConvNhwc"));
      }
    }
  }
}

TEST_CASE("an int8 conv of a static input shape holds its weights once; one of a symbolic batch keeps the initializer",
          "[runtime][int8]") {
  if (!runtime::int8_kernels_available()) return;  // no int8 kernels: QDQ runs in float
  const conv_case p = conv_cases().front();
  const runtime::tensor_map feeds = ramp_feed("x", {2, p.c, p.h, p.h}, 1);
  runtime::session fixed(conv_model(p), runtime::session_options{.threads = 1});
  runtime::session batched(conv_model(p, true), runtime::session_options{.threads = 1});
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    const runtime::tensor_map a = fixed.run(feeds), b = batched.run(feeds);
    for (const auto& [name, t] : b) CHECK(max_unit_difference(a.at(name), t) == 0);
  }
  const runtime::weight_memory_info held = fixed.weight_memory(), kept = batched.weight_memory();
  const std::size_t w_bytes = static_cast<std::size_t>(p.m * p.c * p.k * p.k);  // int8
  CHECK(held.kernel_bytes == kept.kernel_bytes);
  CHECK(held.kernel_bytes >= w_bytes);
  CHECK(held.initializer_bytes + w_bytes == kept.initializer_bytes);
  // The batched session still reorders new batch sizes from its initializer.
  const runtime::tensor_map three = batched.run(ramp_feed("x", {3, p.c, p.h, p.h}, 2));
  CHECK(three.begin()->second.dim(0) == 3);
}

TEST_CASE("int8 kernels serve the QDQ groups they take", "[runtime][int8]") {
  const conv_case p = conv_cases().front();
  const ir::model m = conv_model(p);
  const std::vector<std::string> ops = ops_run(m, ramp_feed("x", {2, p.c, p.h, p.h}, 1));
  if (runtime::int8_kernels_available()) {
    CHECK(contains(ops, "inferopt.cpu.QLinearConvNhwc"));
    CHECK_FALSE(contains(ops, "Conv"));
    CHECK_FALSE(contains(ops, "DequantizeLinear"));
  } else {
    CHECK(contains(ops, "Conv"));
  }
}

namespace {

/// A ResNet-style chain: stem conv, MaxPool, two convs and a residual Add with Relu, a
/// GlobalAveragePool, then a float tail (DequantizeLinear -> Flatten). With `tap` the input's
/// and the MaxPool's int8 outputs are graph outputs too and a float op (Sigmoid of its
/// DequantizeLinear) reads the MaxPool's.
ir::model residual_chain(bool tap, ir::shape x_shape) {
  ir::model m = ir::make_model("qchain");
  qdq_builder q(m);
  auto& gb = q.gb();
  const ir::data_type u8 = ir::data_type::uint8;
  auto conv = [&](ir::value* xq, std::int64_t c, std::int64_t k, std::int64_t stride, float y_scale, int y_zero, bool relu) {
    std::vector<float> w_scales;
    ir::value* w = q.weights({16, c, k, k}, true, w_scales);
    const float xs = xq->producer()->input(1)->initializer()->values<float>().front();
    ir::value* y = gb.op("Conv", {q.dequantize(xq), w, q.bias(16, xs, w_scales)},
                         conv_attributes({c, 0, 16, k, 1, stride, k / 2, 1, u8, 0, 0, true, true, relu}));
    if (relu) y = gb.op("Relu", {y});
    return q.quantize(y, y_scale, y_zero, u8);
  };
  ir::value* x = gb.input("x", ir::data_type::float32, std::move(x_shape));
  ir::value* entry = q.quantize(x, x_scale, 0, u8);
  ir::value* stem = conv(entry, 3, 3, 2, 0.05f, 0, true);
  std::vector<ir::attribute> pool;
  pool.push_back(ir::attribute::make_ints("kernel_shape", {3, 3}));
  pool.push_back(ir::attribute::make_ints("strides", {1, 1}));
  pool.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::value* pooled_float = gb.op("MaxPool", {q.dequantize(stem)}, std::move(pool));
  ir::value* pooled = q.quantize(pooled_float, 0.05f, 0, u8);
  ir::value* branch = conv(conv(pooled, 16, 3, 1, 0.04f, 0, true), 16, 1, 1, 0.06f, 128, false);
  ir::value* sum = gb.op("Relu", {gb.op("Add", {q.dequantize(branch), q.dequantize(pooled)})});
  ir::value* out = q.quantize(sum, 0.07f, 0, u8);
  ir::value* averaged = q.quantize(gb.op("GlobalAveragePool", {q.dequantize(out)}), 0.03f, 3, u8);
  gb.output(gb.op("Flatten", {q.dequantize(averaged)}));
  if (tap) {
    gb.output(entry);  // the QuantizeLinear the chain starts from stays for this reader
    gb.output(pooled);
    gb.output(gb.op("Sigmoid", {q.dequantize(pooled)}));
  }
  ir::infer_shapes(m);
  return m;
}

ir::shape static_input(std::int64_t h) { return static_shape({1, 3, h, h}); }

}  // namespace

TEST_CASE("int8 chains with a residual Add and a MaxPool stay within one unit", "[runtime][int8]") {
  for (bool tap : {false, true}) {
    for (int threads : {1, 2}) {
      INFO("tap " << tap << " threads " << threads);
      const ir::model m = residual_chain(tap, static_input(24));
      // The float outputs are two steps of the last quantization (0.03) at most apart: one from
      // its own rounding, one from the units by which the inputs of the average may differ.
      check_same_outputs(m, ramp_feed("x", {1, 3, 24, 24}, 3), threads, 0.06f);
      if (runtime::int8_kernels_available()) {
        const std::vector<std::string> ops = ops_run(m, ramp_feed("x", {1, 3, 24, 24}, 3));
        CHECK(contains(ops, "inferopt.cpu.QLinearAdd"));
        CHECK(contains(ops, "inferopt.cpu.MaxPoolNhwc"));
        CHECK(contains(ops, "inferopt.cpu.QLinearConvNhwc"));
        CHECK(contains(ops, "inferopt.cpu.QLinearGlobalAveragePoolNhwc"));
        CHECK(contains(ops, "inferopt.cpu.QuantizeLinearNhwc"));
        CHECK(contains(ops, "QuantizeLinear") == tap);  // kept only for the graph output
      }
    }
  }
}

TEST_CASE("int8 groups follow input shapes that change between runs", "[runtime][int8]") {
  ir::shape dynamic{ir::dim(1), ir::dim(3), ir::dim("h"), ir::dim("w")};
  const ir::model m = residual_chain(true, dynamic);
  runtime::session fast(m, runtime::session_options{.threads = 1});
  runtime::session reference(m, runtime::session_options{.threads = 1, .rewrite_graph = false});
  for (std::int64_t h : {16, 24, 17, 16}) {
    INFO("h " << h);
    const runtime::tensor_map feeds = ramp_feed("x", {1, 3, h, h + 2}, static_cast<std::uint32_t>(h));
    const runtime::tensor_map got = fast.run(feeds), want = reference.run(feeds);
    for (const auto& [name, w] : want) {
      INFO("output " << name);
      if (w.dtype() == ir::data_type::uint8) CHECK(max_unit_difference(got.at(name), w) <= 1);
      else CHECK(got.at(name).shape() == w.shape());
    }
  }
}

TEST_CASE("a DequantizeLinear of a constant runs as the folded float constant", "[runtime][int8]") {
  ir::model m = ir::make_model("dq_weights");
  qdq_builder q(m);
  ir::value* a = q.gb().input("a", ir::data_type::float32, static_shape({4, 6}));
  const std::vector<std::int8_t> wq{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 17, -18};
  ir::value* w = q.gb().op("DequantizeLinear", {q.constant<std::int8_t>("wq", {6, 3}, wq), q.scalar(0.25f),
                                                q.constant<std::int8_t>("wz", {}, {2})});
  q.gb().output(q.gb().op("MatMul", {a, w}));
  const runtime::tensor_map feeds = ramp_feed("a", {4, 6}, 9);
  const runtime::tensor_map got = run(m, feeds, true), want = run(m, feeds, false);
  const tensor& y = got.at(m.graph().outputs().front()->name());
  const tensor& r = want.at(m.graph().outputs().front()->name());
  for (std::int64_t i = 0; i < r.element_count(); ++i) CHECK(y.data<float>()[i] == Approx(r.data<float>()[i]).margin(1e-6));
}

TEST_CASE("an int8 Gemm group with a float output matches the float QDQ path", "[runtime][int8]") {
  for (bool per_column : {true, false}) {
    INFO("per column " << per_column);
    ir::model m = ir::make_model("qgemm");
    qdq_builder q(m);
    ir::value* x = q.gb().input("x", ir::data_type::float32, static_shape({3, 32}));
    ir::value* xq = q.quantize(x, x_scale, 4, ir::data_type::uint8);
    std::vector<float> w_scales;
    // [N, K] = [24, 32] as a 4-D weight's first two dims, then flattened by the builder below.
    ir::value* w4 = q.weights({24, 32, 1, 1}, per_column, w_scales);
    ir::node* dq = w4->producer();
    ir::tensor flat = *dq->input(0)->initializer();
    flat.dims = {24, 32};
    ir::value* wq = q.constant<std::int8_t>("wq2", {24, 32}, flat.values<std::int8_t>());
    std::vector<ir::attribute> axis;
    axis.push_back(ir::attribute::make_int("axis", 0));
    ir::value* w = q.gb().op("DequantizeLinear", {wq, dq->input(1), dq->input(2)}, std::move(axis));
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_int("transB", 1));
    q.gb().output(q.gb().op("Gemm", {q.dequantize(xq), w, q.bias(24, x_scale, w_scales)}, std::move(attrs)));
    ir::infer_shapes(m);
    const runtime::tensor_map feeds = ramp_feed("x", {3, 32}, 5);
    const runtime::tensor_map got = run(m, feeds, true), want = run(m, feeds, false);
    const std::string name = m.graph().outputs().front()->name();
    for (std::int64_t i = 0; i < want.at(name).element_count(); ++i) {
      CHECK(got.at(name).data<float>()[i] == Approx(want.at(name).data<float>()[i]).epsilon(1e-5).margin(1e-6));
    }
    if (runtime::int8_kernels_available()) CHECK(contains(ops_run(m, feeds), "inferopt.cpu.QGemm"));
  }
}

TEST_CASE("a QDQ GlobalAveragePool of another rank than 4 stays in float and runs", "[runtime][int8]") {
  for (std::vector<std::int64_t> dims : {std::vector<std::int64_t>{2, 8, 9}, std::vector<std::int64_t>{1, 4, 3, 5, 6}}) {
    INFO("rank " << dims.size());
    ir::model m = ir::make_model("qgap");
    qdq_builder q(m);
    ir::value* x = q.gb().input("x", ir::data_type::float32, static_shape(dims));
    ir::value* xq = q.quantize(x, x_scale, 3, ir::data_type::uint8);
    q.gb().output(q.quantize(q.gb().op("GlobalAveragePool", {q.dequantize(xq)}), 0.01f, 2, ir::data_type::uint8));
    ir::infer_shapes(m);
    check_same_outputs(m, ramp_feed("x", dims, 8));
  }
}

namespace {

/// Runs the builtin kernel of `n` (domain, op) on `inputs`; returns output 0.
tensor run_kernel(const ir::node& n, const std::vector<const tensor*>& inputs) {
  const runtime::kernel_factory* make = runtime::builtin_kernels().find(n.domain(), n.op_type(), 13);
  REQUIRE(make != nullptr);
  std::vector<tensor> outputs(1);
  const std::unique_ptr<runtime::kernel> k = (*make)(runtime::kernel_build_info{n, 13});
  runtime::kernel_context ctx(n, inputs, outputs, 2);
  k->compute(ctx);
  return outputs[0];
}

}  // namespace

TEST_CASE("QuantizeLinearNhwc gives QuantizeLinear's values in channels-last order, ties to even", "[runtime][int8]") {
  for (ir::data_type type : {ir::data_type::uint8, ir::data_type::int8}) {
    INFO(ir::to_string(type));
    ir::model m = ir::make_model("quantize_nhwc");
    qdq_builder q(m);
    const std::vector<std::int64_t> dims{2, 3, 4, 5};
    ir::value* x = q.gb().input("x", ir::data_type::float32, static_shape(dims));
    const int zero = type == ir::data_type::uint8 ? 7 : -3;
    ir::value* plain = q.quantize(x, 0.5f, zero, type);  // ties at odd multiples of 0.25
    const ir::node& quantizer = *plain->producer();
    ir::node* nhwc = m.graph().add_node({"QuantizeLinearNhwc", {x, quantizer.input(1), quantizer.input(2)}, {""}, {}, "", "inferopt.cpu"});
    std::vector<float> values(2 * 3 * 4 * 5);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(static_cast<int>(i) - 60) * 1.5f;
    values[3] = 1e9f;    // saturates high
    values[4] = -1e9f;   // and low
    const tensor xt = tensor::from_values<float>(dims, values);
    const tensor s = tensor::from_ir(*quantizer.input(1)->initializer()), z = tensor::from_ir(*quantizer.input(2)->initializer());
    const tensor want = run_kernel(quantizer, {&xt, &s, &z}), got = run_kernel(*nhwc, {&xt, &s, &z});
    REQUIRE(got.shape() == runtime::shape_t{2, 4, 5, 3});
    for (std::int64_t b = 0; b < 2; ++b) {
      for (std::int64_t c = 0; c < 3; ++c) {
        for (std::int64_t h = 0; h < 4; ++h) {
          for (std::int64_t w = 0; w < 5; ++w) {
            const std::int64_t from = ((b * 3 + c) * 4 + h) * 5 + w, to = ((b * 4 + h) * 5 + w) * 3 + c;
            if (type == ir::data_type::uint8) CHECK(got.data<std::uint8_t>()[to] == want.data<std::uint8_t>()[from]);
            else CHECK(got.data<std::int8_t>()[to] == want.data<std::int8_t>()[from]);
          }
        }
      }
    }
  }
}
