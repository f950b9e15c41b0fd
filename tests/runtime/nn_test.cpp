// The nn kernels on cases the ONNX backend tests leave out: grouped and dilated convolutions
// on random data against a naive reference (through both the prepacked-weights path and the
// per-run packing path, on one and two threads, with shapes that take the row-split, the
// column-split and the in-place pointwise GEMM, and Winograd F(2x2, 3x3) for 3x3 stride-1 maps
// of at least 196 positions), depthwise convolution, the error for a
// channel mismatch, Gemm's broadcast C and MatMul's broadcast batch dims. The GEMM runs the
// widest instruction-set build the CPU has; INFEROPT_NN_ISA=generic (or avx2) runs the others.
//
// Tolerance: the kernels sum float32 products in blocked order, the reference in double; for
// the at most 1152 products of magnitude <= 1 per output here (random signs) the difference
// stays far below 1e-4 * (1 + |expected|), which is what the checks allow.

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/random_values.hpp"
#include "support/static_shape.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::static_shape;

using test::random_values;

const runtime::kernel_registry& nn_kernels() {
  static const runtime::kernel_registry r = [] {
    runtime::kernel_registry k;
    runtime::register_nn_kernels(k);
    return k;
  }();
  return r;
}

struct conv_case {
  std::int64_t n, c, h, w, m, k, group, stride, dilation, pad;
  bool bias;
};

/// Conv in double, NCHW, square kernel, symmetric pads.
std::vector<double> naive_conv(const conv_case& p, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b, std::int64_t oh, std::int64_t ow) {
  const std::int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<double> y(static_cast<std::size_t>(p.n * p.m * oh * ow));
  for (std::int64_t n = 0; n < p.n; ++n) {
    for (std::int64_t m = 0; m < p.m; ++m) {
      const std::int64_t g = m / mg;
      for (std::int64_t i = 0; i < oh; ++i) {
        for (std::int64_t j = 0; j < ow; ++j) {
          double s = p.bias ? b[m] : 0.0;
          for (std::int64_t c = 0; c < cg; ++c) {
            for (std::int64_t u = 0; u < p.k; ++u) {
              for (std::int64_t v = 0; v < p.k; ++v) {
                const std::int64_t ih = i * p.stride - p.pad + u * p.dilation;
                const std::int64_t iw = j * p.stride - p.pad + v * p.dilation;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                s += static_cast<double>(x[((n * p.c + g * cg + c) * p.h + ih) * p.w + iw]) *
                     w[((m * cg + c) * p.k + u) * p.k + v];
              }
            }
          }
          y[((n * p.m + m) * oh + i) * ow + j] = s;
        }
      }
    }
  }
  return y;
}

/// Runs one Conv node named `name`; weights (and bias) are constants or graph inputs.
tensor run_conv(const conv_case& p, const std::vector<float>& x, const std::vector<float>& w,
                const std::vector<float>& b, bool constant_weights, int threads, const std::string& name = "conv") {
  ir::model m = ir::make_model("conv");
  ir::graph_builder gb(m.graph());
  const std::vector<std::int64_t> x_dims{p.n, p.c, p.h, p.w}, w_dims{p.m, p.c / p.group, p.k, p.k};
  ir::value* xv = gb.input("x", ir::data_type::float32, static_shape(x_dims));
  ir::value* wv = constant_weights ? gb.constant("w", w_dims, w) : gb.input("w", ir::data_type::float32, static_shape(w_dims));
  std::vector<ir::value*> inputs{xv, wv};
  if (p.bias) inputs.push_back(constant_weights ? gb.constant("b", {p.m}, b) : gb.input("b", ir::data_type::float32, static_shape({p.m})));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", {p.k, p.k}));
  attrs.push_back(ir::attribute::make_ints("strides", {p.stride, p.stride}));
  attrs.push_back(ir::attribute::make_ints("dilations", {p.dilation, p.dilation}));
  attrs.push_back(ir::attribute::make_ints("pads", {p.pad, p.pad, p.pad, p.pad}));
  attrs.push_back(ir::attribute::make_int("group", p.group));
  gb.output(gb.op("Conv", inputs, std::move(attrs), name));
  runtime::session s(m, runtime::session_options{.threads = threads, .kernels = &nn_kernels()});
  runtime::tensor_map feeds{{"x", tensor::from_values<float>(x_dims, x)}};
  if (!constant_weights) {
    feeds["w"] = tensor::from_values<float>(w_dims, w);
    if (p.bias) feeds["b"] = tensor::from_values<float>({p.m}, b);
  }
  return s.run(feeds).begin()->second;
}

void check_conv(const conv_case& p, bool constant_weights, int threads) {
  const auto x = random_values(static_cast<std::size_t>(p.n * p.c * p.h * p.w), 1);
  const auto w = random_values(static_cast<std::size_t>(p.m * (p.c / p.group) * p.k * p.k), 2);
  const auto b = random_values(static_cast<std::size_t>(p.m), 3);
  const std::int64_t span = p.dilation * (p.k - 1) + 1;
  const std::int64_t oh = (p.h + 2 * p.pad - span) / p.stride + 1, ow = (p.w + 2 * p.pad - span) / p.stride + 1;
  const tensor y = run_conv(p, x, w, b, constant_weights, threads);
  REQUIRE(y.shape() == runtime::shape_t{p.n, p.m, oh, ow});
  const auto want = naive_conv(p, x, w, b, oh, ow);
  const auto got = y.to_float();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-4 * (1.0 + std::fabs(want[i])))) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("conv with groups and dilations matches a naive reference", "[runtime][nn]") {
  // n, c, h, w, m, k, group, stride, dilation, pad, bias
  const conv_case p = GENERATE(values<conv_case>({
      {1, 4, 16, 16, 6, 3, 2, 1, 2, 2, true},    // groups 2, dilation 2 (column-split GEMM)
      {2, 4, 15, 13, 8, 3, 2, 2, 2, 1, false},   // batch, odd sizes, stride 2, no bias
      {1, 8, 40, 40, 32, 3, 1, 1, 1, 1, true},   // 1600 positions: row-split GEMM
      {1, 32, 7, 7, 64, 3, 2, 1, 2, 2, true},    // 49 positions, as in late ResNet layers
      {1, 16, 12, 12, 24, 1, 1, 1, 1, 0, true},  // 1x1: the GEMM reads the input in place
      {1, 6, 9, 9, 4, 1, 2, 2, 1, 0, false},     // 1x1 stride 2: gathered, grouped
      {2, 5, 17, 15, 7, 3, 1, 1, 1, 1, false},   // 3x3 stride 1 (Winograd), odd map: partial tiles
      {1, 3, 20, 16, 4, 3, 1, 1, 1, 0, true},    // Winograd without padding
      {1, 4, 14, 14, 8, 3, 1, 1, 1, 2, true},    // Winograd with padding 2
      {1, 128, 9, 9, 40, 3, 1, 1, 1, 1, true},   // depth 1152: weights packed in several blocks
  }));
  CAPTURE(p.c, p.h, p.m, p.k, p.group, p.stride, p.dilation, p.pad);
  const int threads = GENERATE(1, 2);
  CAPTURE(threads);
  SECTION("with constant weights, packed when the session is built") { check_conv(p, true, threads); }
  SECTION("with weights fed at run time, packed on every run") { check_conv(p, false, threads); }
}

TEST_CASE("depthwise conv matches a naive reference", "[runtime][nn]") {
  const conv_case p = GENERATE(values<conv_case>({
      {1, 8, 14, 14, 8, 3, 8, 1, 1, 1, true},    // one filter per channel
      {2, 6, 11, 10, 12, 3, 6, 2, 1, 1, true},   // channel multiplier 2, stride 2
      {1, 5, 9, 9, 5, 3, 5, 1, 2, 2, false},     // dilation 2
      {1, 4, 8, 8, 4, 5, 4, 2, 1, 2, true},      // 5x5 window, stride 2
  }));
  CAPTURE(p.c, p.h, p.m, p.k, p.stride, p.dilation, p.pad);
  const int threads = GENERATE(1, 2);
  CAPTURE(threads);
  check_conv(p, true, threads);
}

TEST_CASE("conv with a channel count its weights do not take fails naming the node", "[runtime][nn]") {
  const auto x = random_values(3 * 5 * 5, 1);  // 3 channels, the weights expect 4
  const auto w = random_values(3 * 4 * 3 * 3, 2);
  ir::model m = ir::make_model("bad_conv");
  ir::graph_builder gb(m.graph());
  ir::value* xv = gb.input("x", ir::data_type::float32, static_shape({1, 3, 5, 5}));
  gb.output(gb.op("Conv", {xv, gb.constant("w", {3, 4, 3, 3}, w)}, {}, "the_conv"));
  runtime::session s(m, runtime::session_options{.threads = 1, .kernels = &nn_kernels()});
  try {
    s.run({{"x", tensor::from_values<float>({1, 3, 5, 5}, x)}});
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("'the_conv' (Conv)"));
    CHECK_THAT(e.what(), Catch::Contains("3 channels"));
  }
}

TEST_CASE("gemm broadcasts C over the rows and columns of the product", "[runtime][nn]") {
  // Y = alpha * A * B^T + beta * C with A [2,3], B [4,3].
  const std::vector<float> a = random_values(6, 4), b = random_values(12, 5);
  const float alpha = 0.5f, beta = 2.0f;
  using row = std::tuple<std::vector<std::int64_t>, std::vector<float>>;
  const auto [c_dims, c] = GENERATE(table<std::vector<std::int64_t>, std::vector<float>>({
      row{{}, {3.0f}},                      // scalar
      row{{4}, {1, 2, 3, 4}},               // one value per column
      row{{1, 4}, {1, 2, 3, 4}},
      row{{2, 1}, {10, 20}},                // one value per row
      row{{2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}},
  }));
  CAPTURE(c_dims);
  ir::model m = ir::make_model("gemm");
  ir::graph_builder gb(m.graph());
  ir::value* av = gb.input("a", ir::data_type::float32, static_shape({2, 3}));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("transB", 1));
  attrs.push_back(ir::attribute::make_float("alpha", alpha));
  attrs.push_back(ir::attribute::make_float("beta", beta));
  gb.output(gb.op("Gemm", {av, gb.constant("b", {4, 3}, b), gb.constant("c", c_dims, c)}, std::move(attrs), "gemm"));
  runtime::session s(m, runtime::session_options{.threads = 1, .kernels = &nn_kernels()});
  const tensor y = s.run({{"a", tensor::from_values<float>({2, 3}, a)}}).begin()->second;
  REQUIRE(y.shape() == runtime::shape_t{2, 4});
  const auto got = y.to_float();
  for (std::int64_t i = 0; i < 2; ++i) {
    for (std::int64_t j = 0; j < 4; ++j) {
      double dot = 0;
      for (std::int64_t k = 0; k < 3; ++k) dot += static_cast<double>(a[i * 3 + k]) * b[j * 3 + k];
      const std::size_t ci = c_dims.size() == 2 ? static_cast<std::size_t>((c_dims[0] == 1 ? 0 : i) * c_dims[1] + (c_dims[1] == 1 ? 0 : j))
                                                : (c_dims.empty() ? 0 : static_cast<std::size_t>(j));
      CHECK(got[i * 4 + j] == Approx(alpha * dot + beta * c[ci]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("matmul broadcasts batch dims and promotes 1-D operands", "[runtime][nn]") {
  ir::model m = ir::make_model("matmul");
  ir::graph_builder gb(m.graph());
  ir::value* av = gb.input("a", ir::data_type::float32, static_shape({2, 1, 3, 4}));
  ir::value* bv = gb.input("b", ir::data_type::float32, static_shape({5, 4, 2}));
  gb.output(gb.op("MatMul", {av, bv}, {}, "mm"));
  const auto a = random_values(24, 6), b = random_values(40, 7);
  const int threads = GENERATE(1, 2);
  runtime::session s(m, runtime::session_options{.threads = threads, .kernels = &nn_kernels()});
  const tensor y = s.run({{"a", tensor::from_values<float>({2, 1, 3, 4}, a)}, {"b", tensor::from_values<float>({5, 4, 2}, b)}})
                       .begin()
                       ->second;
  REQUIRE(y.shape() == runtime::shape_t{2, 5, 3, 2});
  const auto got = y.to_float();
  for (std::int64_t i = 0; i < 2; ++i) {
    for (std::int64_t j = 0; j < 5; ++j) {
      for (std::int64_t r = 0; r < 3; ++r) {
        for (std::int64_t c = 0; c < 2; ++c) {
          double dot = 0;
          for (std::int64_t k = 0; k < 4; ++k) dot += static_cast<double>(a[(i * 3 + r) * 4 + k]) * b[(j * 4 + k) * 2 + c];
          CHECK(got[((i * 5 + j) * 3 + r) * 2 + c] == Approx(dot).epsilon(1e-5).margin(1e-6));
        }
      }
    }
  }

  SECTION("a 1-D right operand drops its dim from the result") {
    ir::model v = ir::make_model("matvec");
    ir::graph_builder vb(v.graph());
    ir::value* x = vb.input("a", ir::data_type::float32, static_shape({2, 3}));
    vb.output(vb.op("MatMul", {x, vb.constant("v", {3}, {1, 2, 3})}, {}, "mv"));
    runtime::session sv(v, runtime::session_options{.threads = 1, .kernels = &nn_kernels()});
    const tensor out = sv.run({{"a", tensor::from_values<float>({2, 3}, {1, 0, 0, 0, 1, 1})}}).begin()->second;
    CHECK(out.shape() == runtime::shape_t{2});
    CHECK(out.to_float() == std::vector<float>{1, 5});
  }
}

TEST_CASE("linear layers on constant weights give the product at every row count", "[runtime][nn]") {
  // The weights are prepacked once per row count (nn_constant_product.hpp), four row counts at
  // most; the later ones take the plain GEMM. Each row count must give the double reference.
  constexpr std::int64_t k = 67, n = 45;  // not multiples of a vector or block width
  const auto w = random_values(static_cast<std::size_t>(k * n), 8), bias = random_values(static_cast<std::size_t>(n), 9);
  const std::string op = GENERATE("MatMul", "Gemm transB + bias", "FusedGemm Relu + bias");
  const int threads = GENERATE(1, 2);
  CAPTURE(op, threads);
  const bool gemm = op != "MatMul", transposed = op.starts_with("Gemm");
  ir::model m = ir::make_model("linear");
  if (op.starts_with("Fused")) m.opsets.push_back({"com.microsoft", 1});
  ir::graph_builder gb(m.graph());
  ir::shape x_shape{ir::dim{"rows"}, ir::dim{k}};
  ir::value* x = gb.input("x", ir::data_type::float32, x_shape);
  // Gemm's transB reads W as [n, k]: the same matrix, stored transposed.
  std::vector<float> stored = w;
  if (transposed) {
    for (std::int64_t i = 0; i < k; ++i) {
      for (std::int64_t j = 0; j < n; ++j) stored[static_cast<std::size_t>(j * k + i)] = w[static_cast<std::size_t>(i * n + j)];
    }
  }
  ir::value* wv = gb.constant("w", transposed ? std::vector<std::int64_t>{n, k} : std::vector<std::int64_t>{k, n}, stored);
  std::vector<ir::attribute> attrs;
  if (transposed) attrs.push_back(ir::attribute::make_int("transB", 1));
  if (op.starts_with("Fused")) attrs.push_back(ir::attribute::make_string("activation", "Relu"));
  std::vector<ir::value*> inputs{x, wv};
  if (gemm) inputs.push_back(gb.constant("bias", {n}, bias));
  ir::node_spec spec{op.substr(0, op.find(' ')), inputs, {"y"}, std::move(attrs), "linear", op.starts_with("Fused") ? "com.microsoft" : ""};
  m.graph().add_output(m.graph().add_node(std::move(spec))->output(0));
  runtime::session s(m, runtime::session_options{.threads = threads, .kernels = &nn_kernels()});
  for (const std::int64_t rows : {1, 130, 3, 64, 7, 9, 130}) {
    CAPTURE(rows);
    const auto xs = random_values(static_cast<std::size_t>(rows * k), 10 + static_cast<unsigned>(rows));
    const auto got = s.run({{"x", tensor::from_values<float>({rows, k}, xs)}}).at("y").to_float();
    REQUIRE(got.size() == static_cast<std::size_t>(rows * n));
    std::size_t bad = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double dot = gemm ? bias[static_cast<std::size_t>(j)] : 0.0;
        for (std::int64_t t = 0; t < k; ++t) dot += static_cast<double>(xs[static_cast<std::size_t>(i * k + t)]) * w[static_cast<std::size_t>(t * n + j)];
        if (op.starts_with("Fused")) dot = std::max(dot, 0.0);
        if (!(std::fabs(got[static_cast<std::size_t>(i * n + j)] - dot) <= 1e-4 * (1.0 + std::fabs(dot)))) ++bad;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("float layer and RMS normalization match a double reference, statistics included", "[runtime][nn][norm]") {
  // Rows are offset far from 0 (mean 50, spread 1): the variance must come from centred values.
  const std::int64_t cols = GENERATE(1, 3, 16, 17, 48, 768);
  const bool rms = GENERATE(false, true);
  const std::int64_t rows = 37, opset = rms ? 23 : 17;
  CAPTURE(cols, rms);
  std::vector<float> x = random_values(static_cast<std::size_t>(rows * cols), 5);
  for (float& v : x) v += 50.0f;
  const std::vector<float> scale = random_values(static_cast<std::size_t>(cols), 6);
  const std::vector<float> bias = random_values(static_cast<std::size_t>(cols), 7);
  ir::model m = ir::make_model("norm", opset);
  ir::graph_builder b(m.graph());
  std::vector<ir::value*> inputs = {b.input("x", ir::data_type::float32, {rows, cols}), b.constant("scale", {cols}, scale)};
  if (!rms) inputs.push_back(b.constant("bias", {cols}, bias));
  ir::node_spec spec{rms ? "RMSNormalization" : "LayerNormalization", inputs, {"y"}, {}, "norm", ""};
  if (!rms) spec.outputs = {"y", "mean", "inv_std"};
  spec.attributes.push_back(ir::attribute::make_float("epsilon", 1e-5f));
  ir::node* n = m.graph().add_node(std::move(spec));
  for (ir::value* v : n->outputs()) b.output(v);
  const int threads = GENERATE(1, 2);
  runtime::session s(m, runtime::session_options{.threads = threads});
  const runtime::tensor_map out = s.run({{"x", tensor::from_values<float>({rows, cols}, x)}});
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double mean = 0, sq = 0;
    if (!rms) {
      for (std::int64_t i = 0; i < cols; ++i) mean += row[i];
      mean /= static_cast<double>(cols);
    }
    for (std::int64_t i = 0; i < cols; ++i) sq += (row[i] - mean) * (row[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols) + 1e-5);
    if (!rms) {
      CHECK(out.at("mean").data<float>()[r] == Approx(mean).epsilon(1e-6));
      CHECK(out.at("inv_std").data<float>()[r] == Approx(inv).epsilon(1e-5));
    }
    for (std::int64_t i = 0; i < cols; ++i) {
      const double want = (row[i] - mean) * inv * scale[i] + (rms ? 0.0 : bias[i]);
      REQUIRE(out.at("y").data<float>()[r * cols + i] == Approx(want).margin(1e-4).epsilon(1e-4));
    }
  }
}
