// quantize_dynamic: the DynamicQuantizeLinear + MatMulInteger form of linear layers, checked
// structurally and against the float model in our executor.
//
// Bound: int8 weights and uint8 activations over a 2-layer MLP with N(0, 1/fan_in) weights
// keep the output within 3% of its largest value (measured 0.5-1.2%); top-1 never enters.

#include "inferopt/quant/dynamic_quantize.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

using namespace inferopt;

namespace {

/// x[2, 5, 16] -> MatMul(W1) -> Relu -> MatMul(W2) and, from the same x, a MatMul(W3): two
/// layers reading one activation. Plus a Gemm (transB = 1, bias) on a 2-D input.
ir::model linear_layers() {
  ir::model m = ir::make_model("linear_layers");
  ir::graph_builder b(m.graph(), 7);
  ir::value* x = b.input("x", ir::data_type::float32, ir::shape{2, 5, 16});
  ir::value* h = b.relu(b.matmul(x, b.random_constant("W1", {16, 32}, 0.25f)));
  b.output(b.matmul(h, b.random_constant("W2", {32, 8}, 0.18f)));
  b.output(b.matmul(x, b.random_constant("W3", {16, 4}, 0.25f)));
  ir::value* v = b.input("v", ir::data_type::float32, ir::shape{3, 16});
  b.output(b.gemm(v, 6, "head"));
  return m;
}

std::map<std::string, int> op_counts(const ir::model& m) {
  std::map<std::string, int> counts;
  for (const ir::node* n : m.graph().nodes()) ++counts[n->op_type()];
  return counts;
}

/// The largest |float - quantized| over every output, relative to the largest |float|.
double worst_relative_error(const ir::model& reference, const ir::model& quantized, std::uint64_t seed) {
  runtime::session a(reference, runtime::session_options{.threads = 1});
  runtime::session q(quantized, runtime::session_options{.threads = 1});
  const runtime::tensor_map feed = runtime::random_inputs(a, seed);
  const runtime::tensor_map ya = a.run(feed);
  const runtime::tensor_map yq = q.run(feed);
  double worst = 0.0;
  for (const auto& [name, t] : ya) {
    const auto r = t.values<float>();
    const auto v = yq.at(name).values<float>();
    REQUIRE(r.size() == v.size());
    double peak = 0.0, diff = 0.0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      peak = std::max(peak, std::abs(double(r[i])));
      diff = std::max(diff, std::abs(double(r[i]) - v[i]));
    }
    worst = std::max(worst, diff / peak);
  }
  return worst;
}

}  // namespace

TEST_CASE("dynamic quantization turns every linear layer on constant weights into an integer product",
          "[quant][dynamic]") {
  const ir::model reference = linear_layers();
  ir::model m = reference.clone();
  const quant::dynamic_report r = quant::quantize_dynamic(m);
  CHECK(r.nodes_quantized == 4);
  CHECK(r.weights_quantized == 4);
  CHECK(r.activations_quantized == 3);  // x shared by W1 and W3, h, v
  CHECK(r.skipped.empty());
  CHECK_NOTHROW(ir::verify(m.graph()));
  const auto ops = op_counts(m);
  CHECK(ops.at("DynamicQuantizeLinear") == 3);
  CHECK(ops.at("MatMulInteger") == 4);
  CHECK(ops.count("MatMul") == 0);
  CHECK(ops.count("Gemm") == 0);
  CHECK(ops.at("Add") == 1);  // the Gemm's bias, after the rescale
  // The float weights are gone; outputs keep their names.
  for (const char* w : {"W1", "W2", "W3"}) CHECK(m.graph().find_value(w) == nullptr);
  for (std::size_t i = 0; i < reference.graph().outputs().size(); ++i) {
    CHECK(m.graph().outputs()[i]->name() == reference.graph().outputs()[i]->name());
  }
  for (std::uint64_t seed = 1; seed <= 4; ++seed) CHECK(worst_relative_error(reference, m, seed) < 0.03);
}

TEST_CASE("dynamic quantization stores per-column int8 weights with zero points of 0", "[quant][dynamic]") {
  ir::model m = linear_layers();
  (void)quant::quantize_dynamic(m);
  for (const ir::node* n : m.graph().nodes()) {
    if (!n->is("MatMulInteger")) continue;
    const ir::tensor* w = n->input(1)->initializer();
    const ir::tensor* zero = n->input(3)->initializer();
    REQUIRE(w);
    REQUIRE(zero);
    CHECK(w->dtype == ir::data_type::int8);
    REQUIRE(w->dims.size() == 2);
    CHECK(zero->dims == std::vector<std::int64_t>{w->dims[1]});
    const auto values = zero->values<std::int8_t>();
    CHECK(std::all_of(values.begin(), values.end(), [](std::int8_t z) { return z == 0; }));
  }
}

TEST_CASE("dynamic quantization with 7-bit weights uses codes -63..63, the largest of each column 63",
          "[quant][dynamic]") {
  const ir::model reference = linear_layers();
  ir::model m = reference.clone();
  const quant::dynamic_report r = quant::quantize_dynamic(m, quant::dynamic_options{.weight_bits = 7});
  CHECK(r.weight_bits == 7);
  for (const ir::node* n : m.graph().nodes()) {
    if (!n->is("MatMulInteger")) continue;
    const ir::tensor* w = n->input(1)->initializer();
    REQUIRE(w);
    const auto codes = w->values<std::int8_t>();
    const std::int64_t columns = w->dims[1];
    for (std::int64_t c = 0; c < columns; ++c) {
      int largest = 0;
      for (std::size_t k = static_cast<std::size_t>(c); k < codes.size(); k += static_cast<std::size_t>(columns)) {
        largest = std::max(largest, std::abs(int(codes[k])));
      }
      CHECK(largest == 63);
    }
  }
  CHECK(worst_relative_error(reference, m, 2) < 0.03);
}

TEST_CASE("dynamic quantization per tensor keeps one weight scale", "[quant][dynamic]") {
  const ir::model reference = linear_layers();
  ir::model m = reference.clone();
  (void)quant::quantize_dynamic(m, quant::dynamic_options{.weights = quant::weight_granularity::per_tensor});
  for (const ir::node* n : m.graph().nodes()) {
    if (n->is("MatMulInteger")) CHECK(n->input(3)->initializer()->dims.empty());
  }
  CHECK(worst_relative_error(reference, m, 3) < 0.05);
}

TEST_CASE("dynamic quantization leaves excluded layers and products of two activations in float", "[quant][dynamic]") {
  ir::model m = ir::make_model("attention_scores");
  ir::graph_builder b(m.graph(), 3);
  ir::value* q = b.input("q", ir::data_type::float32, ir::shape{4, 8});
  ir::value* k = b.input("k", ir::data_type::float32, ir::shape{8, 4});
  b.output(b.matmul(q, k));
  b.output(b.gemm(q, 3, "classifier"));
  quant::dynamic_options o;
  o.exclude_nodes = {"classifier"};
  const quant::dynamic_report r = quant::quantize_dynamic(m, o);
  CHECK(r.nodes_quantized == 0);
  REQUIRE(r.skipped.size() == 2);
  CHECK(op_counts(m).count("MatMulInteger") == 0);
}

TEST_CASE("dynamic quantization refuses a weight holding NaN and leaves the model as it was", "[quant][dynamic]") {
  ir::model m = ir::make_model("nan_weight");
  ir::graph_builder b(m.graph(), 1);
  ir::value* x = b.input("x", ir::data_type::float32, ir::shape{1, 2});
  b.output(b.matmul(x, b.constant("W", {2, 2}, {1.0f, std::nanf(""), 0.5f, 2.0f})));
  const auto before = op_counts(m);
  CHECK_THROWS_AS(quant::quantize_dynamic(m), error);
  CHECK(op_counts(m) == before);
}

TEST_CASE("dynamic quantization raises an opset 10 model to 13", "[quant][dynamic]") {
  ir::model m = ir::make_model("old", 10);
  ir::graph_builder b(m.graph(), 5);
  ir::value* x = b.input("x", ir::data_type::float32, ir::shape{3, 8});
  b.output(b.matmul(x, b.random_constant("W", {8, 8}, 0.3f)));
  const ir::model reference = m.clone();
  const quant::dynamic_report r = quant::quantize_dynamic(m);
  CHECK(r.opset_raised);
  CHECK(m.opset("") == 13);
  CHECK(worst_relative_error(reference, m, 2) < 0.03);
}
