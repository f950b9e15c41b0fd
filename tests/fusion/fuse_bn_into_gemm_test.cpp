// fuse-bn-into-gemm: folds BatchNormalization or a per-column Mul/Add/Sub/Div after Gemm or
// MatMul into the weight and a bias.
//
// Numbers: the folded model runs in our executor against the original on the same random
// inputs at rtol 1e-4. The fold itself is exact in double; the only error is rounding the
// folded weights back to float32 and the changed order of one multiply and one add per
// output, a few ulps, far inside 1e-4.

#include "inferopt/fusion/fuse_bn_into_gemm.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-bn-into-gemm");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record run_and_compare(ir::model& m) { return checker.run_and_compare(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

std::vector<ir::attribute> gemm_attributes(float alpha, float beta, int trans_a, int trans_b) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("alpha", alpha));
  attrs.push_back(ir::attribute::make_float("beta", beta));
  attrs.push_back(ir::attribute::make_int("transA", trans_a));
  attrs.push_back(ir::attribute::make_int("transB", trans_b));
  return attrs;
}

/// A Gemm reading x [4, 8] with a constant B (transB as given) and a constant C of `c_dims`
/// (none when empty optional); the output is typed [4, 6].
ir::value* gemm(ir::graph_builder& b, ir::value* x, std::optional<std::vector<std::int64_t>> c_dims,
                int trans_b = 1, float alpha = 1.0f, float beta = 1.0f) {
  ir::value* w = b.random_constant("w", trans_b ? std::vector<std::int64_t>{6, 8} : std::vector<std::int64_t>{8, 6}, 0.5f);
  std::vector<ir::value*> inputs{x, w};
  if (c_dims) inputs.push_back(b.random_constant("c", *c_dims, 0.5f));
  ir::value* y = b.op("Gemm", inputs, gemm_attributes(alpha, beta, 0, trans_b));
  y->set_type(test::float_type({4, 6}));
  return y;
}

/// A per-column constant of shape `dims` with values away from zero.
ir::value* column_constant(ir::graph_builder& b, std::vector<std::int64_t> dims) {
  std::vector<float> values(static_cast<std::size_t>(ir::tensor::element_count(dims)));
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = 0.5f + 0.25f * static_cast<float>(k % 5);
  return b.constant("k", std::move(dims), values);
}

}  // namespace

TEST_CASE("fuse-bn-into-gemm folds batch norm into a Gemm with transB and a bias", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("gemm_bn");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  b.output(b.batch_norm(b.gemm(x, 6)));

  pass_record r = run_and_compare(m);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("batch-norms-folded") == 1);
  CHECK(test::count_ops(m.graph(), "BatchNormalization") == 0);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
}

TEST_CASE("fuse-bn-into-gemm honours transB, alpha, beta and every broadcast shape of C",
          "[fusion][fuse-bn-into-gemm]") {
  using row = std::tuple<int, float, float, std::optional<std::vector<std::int64_t>>>;
  const auto [trans_b, alpha, beta, c_dims] = GENERATE(table<int, float, float, std::optional<std::vector<std::int64_t>>>({
      row{0, 1.0f, 1.0f, std::vector<std::int64_t>{6}},
      row{1, 0.5f, 2.0f, std::vector<std::int64_t>{1, 6}},
      row{0, 1.5f, 0.5f, std::vector<std::int64_t>{}},
      row{1, 1.0f, 3.0f, std::vector<std::int64_t>{1}},
      row{0, 2.0f, 0.25f, std::vector<std::int64_t>{4, 6}},
      row{1, 1.0f, 1.5f, std::vector<std::int64_t>{4, 1}},
      row{0, 0.75f, 0.0f, std::vector<std::int64_t>{4, 6}},
      row{1, 1.0f, 1.0f, std::nullopt},
  }));
  CAPTURE(trans_b, alpha, beta, c_dims.has_value(), c_dims ? c_dims->size() : 0);
  ir::model m = ir::make_model("gemm_bn");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, x, c_dims, trans_b, alpha, beta);
  SECTION("batch norm") { b.output(b.batch_norm(y)); }
  SECTION("Mul by a per-column constant") { b.output(b.mul(y, column_constant(b, {6}))); }
  SECTION("Add of a per-column constant, constant first") { b.output(b.add(column_constant(b, {1, 6}), y)); }
  SECTION("Sub of a per-column constant") { b.output(b.op("Sub", {y, column_constant(b, {6})})); }
  SECTION("Div by a scalar constant") { b.output(b.op("Div", {y, column_constant(b, {1})})); }

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-bn-into-gemm folds a Mul then an Add after one Gemm", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("gemm_mul_add");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  b.output(b.add(b.mul(gemm(b, x, std::vector<std::int64_t>{6}), column_constant(b, {6})), column_constant(b, {6})));

  pass_record r = run_and_compare(m);
  CHECK(r.rewrites == 2);
  CHECK(r.counters.at("elementwise-folded") == 2);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-bn-into-gemm turns a 2-D MatMul followed by batch norm into a Gemm", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("matmul_bn");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* w = b.random_constant("w", {8, 6}, 0.5f);
  SECTION("batch norm") { b.output(b.batch_norm(b.matmul(x, w))); }
  SECTION("Add") { b.output(b.add(b.matmul(x, w), column_constant(b, {6}))); }

  pass_record r = run_and_compare(m);
  CHECK(r.counters.at("matmuls-became-gemm") == 1);
  CHECK(test::count_ops(m.graph(), "MatMul") == 0);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-bn-into-gemm folds a per-column Mul or Div into a batched MatMul's weight",
          "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("matmul_mul");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 8});
  ir::value* y = b.matmul(x, b.random_constant("w", {8, 6}, 0.5f));
  SECTION("Mul by [6]") { b.output(b.mul(y, column_constant(b, {6}))); }
  SECTION("Mul by [1, 1, 6]") { b.output(b.mul(column_constant(b, {1, 1, 6}), y)); }
  SECTION("Div by [1, 6]") { b.output(b.op("Div", {y, column_constant(b, {1, 6})})); }

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "MatMul") == 1);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-bn-into-gemm keeps the step's graph output name", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("names");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  b.output(b.batch_norm(b.gemm(x, 6), 1e-5f, "bn"));
  const std::vector<std::string> names = test::output_names(m.graph());
  run_and_compare(m);
  CHECK(test::output_names(m.graph()) == names);
  CHECK(m.graph().outputs()[0]->producer()->is("Gemm"));
}

TEST_CASE("fuse-bn-into-gemm leaves a weight shared with another Gemm as it was", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("shared");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* w = b.random_constant("w", {6, 8}, 0.5f);
  ir::value* y1 = b.op("Gemm", {x, w}, gemm_attributes(1.0f, 1.0f, 0, 1));
  y1->set_type(test::float_type({4, 6}));
  ir::value* y2 = b.op("Gemm", {x, w}, gemm_attributes(1.0f, 1.0f, 0, 1));
  b.output(b.batch_norm(y1));
  b.output(y2);

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "BatchNormalization") == 0);
  CHECK(y2->producer()->input(1) == w);
  CHECK(y1->producer()->input(1) != w);
}

TEST_CASE("fuse-bn-into-gemm leaves a bias shared with another Gemm as it was", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("shared_bias");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* c = b.random_constant("c", {6}, 0.5f);
  const std::string c_bytes = *c->initializer()->bytes;
  ir::value* y1 = b.op("Gemm", {x, b.random_constant("w1", {6, 8}, 0.5f), c}, gemm_attributes(1.0f, 1.0f, 0, 1));
  y1->set_type(test::float_type({4, 6}));
  ir::value* y2 = b.op("Gemm", {x, b.random_constant("w2", {6, 8}, 0.5f), c}, gemm_attributes(1.0f, 1.0f, 0, 1));
  b.output(b.batch_norm(y1));
  b.output(y2);

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "BatchNormalization") == 0);
  CHECK(y2->producer()->input(2) == c);
  CHECK(*c->initializer()->bytes == c_bytes);
  CHECK(y1->producer()->input(2) != c);
}

TEST_CASE("fuse-bn-into-gemm declines when the weight is not a constant", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("no_const");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  SECTION("weight is a graph input") {
    ir::value* w = b.input("w", ir::data_type::float32, {8, 6});
    b.output(b.batch_norm(b.matmul(x, w)));
  }
  SECTION("weight is an initializer a caller may override") {
    ir::value* w = b.input("w", ir::data_type::float32, {8, 6});
    m.graph().set_initializer(w, ir::tensor::from_values<float>("w", {8, 6}, std::vector<float>(48, 0.5f)));
    b.output(b.batch_norm(b.matmul(x, w)));
  }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-weight-not-constant") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines when the Gemm output has another reader or is a graph output",
          "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("users");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = b.gemm(x, 6);
  b.output(b.batch_norm(y));
  SECTION("second reader") { b.output(b.relu(y)); }
  SECTION("graph output") { b.output(y); }
  require_declined(m);
}

TEST_CASE("fuse-bn-into-gemm declines a constant that is not per column", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("not_per_column");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, x, std::vector<std::int64_t>{6});
  SECTION("varies along rows") { b.output(b.mul(y, column_constant(b, {4, 1}))); }
  SECTION("adds an axis") { b.output(b.add(y, column_constant(b, {1, 1, 6}))); }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-shape") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines Sub or Div with the Gemm output second", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("order");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, x, std::vector<std::int64_t>{6});
  const char* op = GENERATE("Sub", "Div");
  CAPTURE(op);
  b.output(b.op(op, {column_constant(b, {6}), y}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-operand-order") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines a Div by a constant holding zero", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("div0");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, x, std::vector<std::int64_t>{6});
  b.output(b.op("Div", {y, b.constant("d", {6}, {1.0f, 2.0f, 0.0f, 1.0f, 1.0f, 1.0f})}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-zero-divisor") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines a step constant of another element type", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("types");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, x, std::vector<std::int64_t>{6});
  ir::value* k = m.graph().add_initializer("k64", ir::tensor::from_values<double>("k64", {6}, std::vector<double>(6, 2.0)));
  b.output(b.op("Mul", {y, k}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-type") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines batch norm in training form", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("training");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* bn_out = b.batch_norm(b.gemm(x, 6));
  ir::node* bn = bn_out->producer();
  b.output(bn_out);
  SECTION("training_mode = 1") { bn->set_attribute(ir::attribute::make_int("training_mode", 1)); }
  SECTION("running mean read") {
    // The same node with a running-mean output that the graph reads.
    ir::node* bn2 = m.graph().add_node(ir::node_spec{"BatchNormalization",
                                                     {bn->input(0), bn->input(1), bn->input(2), bn->input(3), bn->input(4)},
                                                     {"y2", "running_mean"}, {}, "bn2", {}});
    m.graph().replace_all_uses(bn_out, bn2->output(0));
    m.graph().erase(bn);
    m.graph().add_output(bn2->output(1));
  }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-training") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines batch norm before opset 7 without is_test", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("old", 6);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  b.output(b.batch_norm(b.gemm(x, 6)));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-training") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines batch norm whose variance plus epsilon is not positive",
          "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("variance");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = b.gemm(x, 6);
  std::vector<float> ones(6, 1.0f), zeros(6, 0.0f), var{1.0f, 1.0f, -2.0f, 1.0f, 1.0f, 1.0f};
  b.output(b.op("BatchNormalization", {y, b.constant("s", {6}, ones), b.constant("b", {6}, zeros),
                                       b.constant("mean", {6}, zeros), b.constant("var", {6}, var)}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-variance") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines batch norm after a MatMul whose output is not 2-D",
          "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("bn3d");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 6, 8});
  b.output(b.batch_norm(b.matmul(x, b.random_constant("w", {8, 6}, 0.5f))));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-shape") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines an Add after a MatMul whose input is not known to be 2-D",
          "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("add3d");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 8});
  SECTION("3-D input") { b.output(b.add(b.matmul(x, b.random_constant("w", {8, 6}, 0.5f)), column_constant(b, {6}))); }
  SECTION("rank unknown") {
    ir::value* u = b.op("Relu", {x});
    b.output(b.add(b.matmul(u, b.random_constant("w", {8, 6}, 0.5f)), column_constant(b, {6})));
  }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-shift-needs-gemm") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines a Gemm whose C is not a constant", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("c_input");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* c = b.input("c", ir::data_type::float32, {6});
  ir::value* y = b.op("Gemm", {x, b.random_constant("w", {8, 6}, 0.5f), c});
  y->set_type(test::float_type({4, 6}));
  b.output(b.mul(y, column_constant(b, {6})));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-bias-not-constant") == 1);
}

TEST_CASE("fuse-bn-into-gemm declines a Gemm before opset 7", "[fusion][fuse-bn-into-gemm]") {
  ir::model m = ir::make_model("gemm6", 6);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  b.output(b.mul(gemm(b, x, std::vector<std::int64_t>{6}), column_constant(b, {6})));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-opset") == 1);
}
