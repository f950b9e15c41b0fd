// The graph builder: the shapes it tracks, the weights it makes, and the sample models built
// with it.

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/verify.hpp"

using namespace inferopt;

namespace {

using dims = std::vector<std::int64_t>;

dims static_dims(const ir::value* v) {
  REQUIRE(v->type());
  REQUIRE(v->type()->has_static_shape());
  dims out;
  for (const ir::dim& d : *v->type()->dims) out.push_back(d.value());
  return out;
}

dims initializer_dims(const ir::node* n, std::size_t input) {
  const ir::value* v = n->input(input);
  REQUIRE(v);
  REQUIRE(v->initializer());
  CHECK(static_dims(v) == v->initializer()->dims);  // the value's type matches its tensor
  return v->initializer()->dims;
}

std::int64_t parameter_count(const ir::graph& g) {
  std::int64_t total = 0;
  for (ir::value* v : g.initializers()) total += v->initializer()->element_count();
  return total;
}

}  // namespace

TEST_CASE("conv output shapes follow kernel, stride, padding, dilation and group", "[ir][graph-builder]") {
  auto [kernel, stride, pad, dilation, group, in_hw, out_hw] =
      GENERATE(table<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>({
          {3, 1, -1, 1, 1, 32, 32},   // "same" padding keeps the size
          {3, 2, -1, 1, 1, 32, 16},
          {3, 2, -1, 1, 1, 33, 17},
          {7, 2, 3, 1, 1, 224, 112},  // ResNet's stem
          {1, 1, 0, 1, 1, 14, 14},
          {1, 2, 0, 1, 1, 15, 8},
          {5, 1, 0, 1, 1, 20, 16},    // no padding shrinks by kernel - 1
          {3, 1, -1, 2, 1, 20, 20},   // dilated "same" padding is 2
          {3, 1, 0, 2, 1, 20, 16},
          {3, 1, -1, 1, 4, 16, 16},   // grouped
          {3, 1, -1, 1, 8, 16, 16},   // depthwise
      }));
  CAPTURE(kernel, stride, pad, dilation, group, in_hw);

  ir::model m = ir::make_model("conv");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 8, in_hw, in_hw});
  ir::conv_options o{.kernel = kernel, .stride = stride, .pad = pad, .group = group, .dilation = dilation};
  ir::value* y = b.conv(x, 16, o);

  CHECK(static_dims(y) == dims{2, 16, out_hw, out_hw});
  const ir::node* n = y->producer();
  REQUIRE(n->is("Conv"));
  REQUIRE(n->inputs().size() == 3);
  CHECK(initializer_dims(n, 1) == dims{16, 8 / group, kernel, kernel});
  CHECK(initializer_dims(n, 2) == dims{16});
  const std::int64_t p = pad >= 0 ? pad : dilation * (kernel - 1) / 2;
  CHECK(n->attr_ints("pads", {}) == dims{p, p, p, p});
  CHECK(n->attr_ints("strides", {}) == dims{stride, stride});
  CHECK(n->attr_ints("dilations", {}) == dims{dilation, dilation});
  CHECK(n->attr_int("group", 0) == group);

  ir::value* no_bias = b.conv(x, 4, {.kernel = 1, .bias = false});
  CHECK(no_bias->producer()->inputs().size() == 2);
  CHECK(ir::find_problems(m.graph()).empty());
}

TEST_CASE("the builder refuses inputs it cannot shape", "[ir][graph-builder]") {
  ir::model m = ir::make_model("bad");
  ir::graph_builder b(m.graph());
  ir::value* flat = b.input("flat", ir::data_type::float32, {2, 8});
  ir::value* image = b.input("image", ir::data_type::float32, {1, 6, 8, 8});
  ir::value* dynamic = b.input("dynamic", ir::data_type::float32, {"batch", 6, 8, 8});
  CHECK_THROWS_AS(b.conv(flat, 4), inferopt::error);
  CHECK_THROWS_AS(b.conv(image, 4, {.group = 4}), inferopt::error);
  CHECK_THROWS_AS(b.conv(dynamic, 4), inferopt::error);
  CHECK_THROWS_AS(b.flatten(image, 5), inferopt::error);
  CHECK_THROWS_AS(b.flatten(image, -5), inferopt::error);
  CHECK_THROWS_AS(b.gemm(image, 4), inferopt::error);
  CHECK(m.graph().node_count() == 0);
}

TEST_CASE("pool output shapes follow kernel, stride and padding", "[ir][graph-builder]") {
  auto [kernel, stride, pad, in_hw, out_hw] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>({
      {2, 2, 0, 32, 16},
      {2, 2, 0, 33, 16},  // floor, not ceil
      {3, 2, 1, 112, 56},  // ResNet's max pool
      {3, 1, 1, 7, 7},
      {3, 3, 0, 9, 3},
  }));
  CAPTURE(kernel, stride, pad, in_hw);

  ir::model m = ir::make_model("pool");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {1, 5, in_hw, in_hw});
  ir::pool_options o{.kernel = kernel, .stride = stride, .pad = pad};
  ir::value* max = b.max_pool(x, o);
  ir::value* avg = b.average_pool(x, o);
  CHECK(static_dims(max) == dims{1, 5, out_hw, out_hw});
  CHECK(static_dims(avg) == dims{1, 5, out_hw, out_hw});
  CHECK(max->producer()->is("MaxPool"));
  CHECK(avg->producer()->is("AveragePool"));
  CHECK(max->producer()->attr_ints("kernel_shape", {}) == dims{kernel, kernel});
  CHECK(static_dims(b.global_average_pool(x)) == dims{1, 5, 1, 1});
}

TEST_CASE("flatten keeps the dims before the axis and multiplies the rest", "[ir][graph-builder]") {
  auto [axis, expected] = GENERATE(table<std::int64_t, dims>({
      {0, {1, 120}},
      {1, {2, 60}},
      {2, {6, 20}},
      {4, {120, 1}},
      {-1, {24, 5}},
      {-3, {2, 60}},
  }));
  CAPTURE(axis);
  ir::model m = ir::make_model("flatten");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4, 5});
  ir::value* y = b.flatten(x, axis);
  CHECK(static_dims(y) == expected);
  CHECK(y->producer()->attr_int("axis", 99) == axis);
}

TEST_CASE("concat adds up the sizes along its axis", "[ir][graph-builder]") {
  ir::model m = ir::make_model("concat");
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {1, 3, 8, 8});
  ir::value* c = b.input("c", ir::data_type::float32, {1, 5, 8, 8});
  ir::value* d = b.input("d", ir::data_type::float32, {1, 3, 8, 2});
  CHECK(static_dims(b.concat({a, c, a}, 1)) == dims{1, 11, 8, 8});
  CHECK(static_dims(b.concat({a, d}, -1)) == dims{1, 3, 8, 10});
  CHECK(static_dims(b.concat({a}, 0)) == dims{1, 3, 8, 8});
}

TEST_CASE("gemm makes an [out, in] weight used transposed and an [N, out] output", "[ir][graph-builder]") {
  ir::model m = ir::make_model("gemm");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 32});
  ir::value* y = b.gemm(x, 10);
  CHECK(static_dims(y) == dims{4, 10});
  const ir::node* n = y->producer();
  REQUIRE(n->is("Gemm"));
  CHECK(n->attr_int("transB", 0) == 1);
  CHECK(initializer_dims(n, 1) == dims{10, 32});
  CHECK(initializer_dims(n, 2) == dims{10});

  ir::value* z = b.dense(x, 6);  // MatMul + Add with a [in, out] weight
  CHECK(static_dims(z) == dims{4, 6});
  const ir::node* matmul = z->producer()->input(0)->producer();
  REQUIRE(matmul->is("MatMul"));
  CHECK(initializer_dims(matmul, 1) == dims{32, 6});

  CHECK(static_dims(b.matmul(b.input("t", ir::data_type::float32, {2, 4, 32}), b.constant("k", {32, 3}, std::vector<float>(96, 1.0f)))) ==
        dims{2, 4, 3});
}

TEST_CASE("batch norm gets per-channel parameters with positive scale and variance", "[ir][graph-builder]") {
  ir::model m = ir::make_model("bn");
  ir::graph_builder b(m.graph(), 7);
  ir::value* x = b.input("x", ir::data_type::float32, {1, 12, 4, 4});
  ir::value* y = b.batch_norm(x, 1e-3f);
  CHECK(static_dims(y) == dims{1, 12, 4, 4});
  const ir::node* n = y->producer();
  REQUIRE(n->inputs().size() == 5);
  for (std::size_t k = 1; k < 5; ++k) CHECK(initializer_dims(n, k) == dims{12});
  CHECK(n->attr_float("epsilon", 0.0f) == Approx(1e-3f));
  for (float s : n->input(1)->initializer()->values<float>()) CHECK(s > 0.0f);
  for (float v : n->input(4)->initializer()->values<float>()) CHECK(v > 0.0f);
}

TEST_CASE("builder weights are random, with He scaling, and reproducible from the seed", "[ir][graph-builder]") {
  auto weights = [](std::uint32_t seed) {
    ir::model m = ir::make_model("w");
    ir::graph_builder b(m.graph(), seed);
    ir::value* y = b.conv(b.input("x", ir::data_type::float32, {1, 64, 8, 8}), 64, {.kernel = 3});
    return y->producer()->input(1)->initializer()->values<float>();
  };
  const std::vector<float> w = weights(5);
  CHECK(w == weights(5));
  CHECK(w != weights(6));
  // He initialisation: variance 2 / fan_in, fan_in = 64 * 3 * 3.
  double sum_sq = 0.0;
  for (float v : w) sum_sq += static_cast<double>(v) * v;
  CHECK(sum_sq / static_cast<double>(w.size()) == Approx(2.0 / (64 * 9)).epsilon(0.05));
}

TEST_CASE("sample models pass verify and the onnx checker", "[ir][graph-builder]") {
  SECTION("the default model") {
    ir::model m = ir::make_default_model();
    CHECK_NOTHROW(ir::verify(m.graph()));
    CHECK_NOTHROW(ir::check_with_onnx(m));
    REQUIRE(m.graph().outputs().size() == 1);
    CHECK(m.graph().outputs()[0]->name() == "logits");
    CHECK(static_dims(m.graph().outputs()[0]) == dims{1, 10});
  }

  SECTION("a narrow ResNet-50") {
    ir::model m = ir::make_resnet50(1, 8);
    CHECK_NOTHROW(ir::verify(m.graph()));
    CHECK_NOTHROW(ir::check_with_onnx(m));
    CHECK(static_dims(m.graph().outputs()[0]) == dims{1, 1000});
  }

  SECTION("a graph with every op the builder makes") {
    ir::model m = ir::make_model("all_ops");
    ir::graph_builder b(m.graph());
    ir::value* x = b.input("x", ir::data_type::float32, {1, 4, 16, 16});
    ir::value* y = b.relu(b.batch_norm(b.conv(x, 8)));
    y = b.concat({b.max_pool(y), b.average_pool(y)}, 1);
    y = b.leaky_relu(b.mul(y, b.sigmoid(y)));
    y = b.clip(b.dropout(b.tanh(y)), -1.0f, 1.0f);
    y = b.flatten(b.global_average_pool(b.identity(y)));
    b.output(b.reshape(b.dense(b.gemm(y, 12), 6), {2, 3}));
    CHECK_NOTHROW(ir::verify(m.graph()));
    CHECK_NOTHROW(ir::check_with_onnx(m));
  }
}

TEST_CASE("make_resnet50 has ResNet-50's shape and about 25.5 million parameters", "[ir][graph-builder]") {
  ir::model m = ir::make_resnet50();
  const ir::graph& g = m.graph();
  // 25,557,032 learned parameters plus BatchNorm's running mean and variance (53,120).
  CHECK(static_cast<double>(parameter_count(g)) == Approx(25'557'032.0).epsilon(0.01));
  REQUIRE(g.inputs().size() == 1);
  CHECK(static_dims(g.inputs()[0]) == dims{1, 3, 224, 224});
  CHECK(static_dims(g.outputs()[0]) == dims{1, 1000});

  std::size_t convs = 0;
  for (ir::node* n : g.nodes()) convs += n->is("Conv") ? 1 : 0;
  CHECK(convs == 53);  // 1 stem + 16 blocks x 3 + 4 projections

  // Halving every width divides the conv parameters by about four.
  const double narrow = static_cast<double>(parameter_count(ir::make_resnet50(1, 2).graph()));
  CHECK(narrow < static_cast<double>(parameter_count(g)) / 3.0);
}
