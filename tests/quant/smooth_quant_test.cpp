// smooth_quant: per-channel activation scale moved into the weights, folded into the
// LayerNorm or carried by a Mul; the float model's outputs must not change.

#include "inferopt/quant/smooth_quant.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/inputs.hpp"

using namespace inferopt;

namespace {

/// x[2, 6, 8] -> LayerNormalization (gamma with one outlier channel of 40) -> two MatMuls;
/// with `residual`, the norm's output is also added to the first product.
ir::model normed_projections(bool residual) {
  ir::model m = ir::make_model("normed_projections", 17);
  ir::graph_builder b(m.graph(), 5);
  ir::value* x = b.input("x", ir::data_type::float32, {2, 6, 8});
  std::vector<float> gamma{1.0f, 0.8f, 1.2f, 40.0f, 0.9f, 1.1f, 1.0f, 0.7f};
  ir::value* h = b.op("LayerNormalization", {x, b.constant("gamma", {8}, gamma), b.random_constant("beta", {8}, 0.2f)});
  ir::value* q = b.matmul(h, b.random_constant("Wq", {8, 8}, 0.3f));
  ir::value* v = b.matmul(h, b.random_constant("Wv", {8, 4}, 0.3f));
  b.output(residual ? b.add(q, h) : q);
  b.output(v);
  return m;
}

std::vector<runtime::tensor_map> batches(const ir::model& m) {
  runtime::session s(m, runtime::session_options{.threads = 1});
  return {runtime::random_inputs(s, 1), runtime::random_inputs(s, 2)};
}

}  // namespace

TEST_CASE("smooth-quant folds the factors into the LayerNorm when only the projections read it", "[quant][smooth-quant]") {
  ir::model m = normed_projections(false);
  const ir::model before = test::copy_of(m);
  const quant::smooth_quant_report r = quant::smooth_quant(m, batches(m), {.alpha = 0.5});
  REQUIRE(r.smoothed.size() == 1);
  const quant::smoothed_activation& a = r.smoothed[0];
  CHECK(a.folded_into_norm);
  CHECK(a.layers.size() == 2);
  CHECK(a.outlier_ratio_before > 10.0);  // channel 3
  CHECK(a.outlier_ratio_after < a.outlier_ratio_before / 3.0);
  CHECK(test::count_ops(m.graph(), "Mul") == 0);
  test::require_same_outputs(before, m, 7, 1e-4, 1e-5);
}

TEST_CASE("smooth-quant divides through a Mul when a residual reads the activation too", "[quant][smooth-quant]") {
  ir::model m = normed_projections(true);
  const ir::model before = test::copy_of(m);
  const quant::smooth_quant_report r = quant::smooth_quant(m, batches(m), {.alpha = 0.8});
  REQUIRE(r.smoothed.size() == 1);
  CHECK_FALSE(r.smoothed[0].folded_into_norm);
  CHECK(test::count_ops(m.graph(), "Mul") == 1);
  test::require_same_outputs(before, m, 7, 1e-4, 1e-5);
}

TEST_CASE("smooth-quant with alpha 0 changes no value, and refuses alpha outside [0, 1] or no batches", "[quant][smooth-quant]") {
  ir::model m = normed_projections(false);
  const ir::model before = test::copy_of(m);
  const quant::smooth_quant_report r = quant::smooth_quant(m, batches(m), {.alpha = 0.0});
  REQUIRE(r.smoothed.size() == 1);
  test::require_same_outputs(before, m, 7, 1e-4, 1e-5);
  for (double alpha : {-0.1, 1.5}) {
    ir::model other = normed_projections(false);
    CHECK_THROWS_AS(quant::smooth_quant(other, batches(other), {.alpha = alpha}), error);
  }
  ir::model none = normed_projections(false);
  CHECK_THROWS_AS(quant::smooth_quant(none, {}, {}), error);
}

TEST_CASE("smooth-quant leaves an activation whose weight another layer also reads", "[quant][smooth-quant]") {
  ir::model m = ir::make_model("shared_weight", 17);
  ir::graph_builder b(m.graph(), 6);
  ir::value* x = b.input("x", ir::data_type::float32, {3, 8});
  ir::value* w = b.random_constant("W", {8, 8}, 0.3f);
  b.output(b.matmul(b.relu(x), w));
  b.output(b.matmul(b.tanh(x), w));
  const std::string bytes = test::bytes_of(m);
  const quant::smooth_quant_report r = quant::smooth_quant(m, batches(m));
  CHECK(r.smoothed.empty());
  CHECK(r.skipped.size() == 2);
  CHECK(test::bytes_of(m) == bytes);
}
