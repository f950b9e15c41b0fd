// fuse-gemm-transpose: matrix Transposes around Gemm and MatMul become transA/transB.
//
// Numbers: checked against the original model in our executor at rtol 1e-4. Absorbing a
// transpose changes only how the Gemm reads memory; folding an output transpose swaps the
// operands, so each output element is the same dot product summed in the same order.
// Any difference is rounding in the executor's blocking, a few ulps.

#include "inferopt/fusion/fuse_gemm_transpose.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-gemm-transpose");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record run_and_compare(ir::model& m) { return checker.run_and_compare(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

ir::value* transpose(ir::graph_builder& b, ir::value* x, std::vector<std::int64_t> perm = {1, 0}) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("perm", std::move(perm)));
  return b.op("Transpose", {x}, std::move(attrs));
}

ir::value* gemm(ir::graph_builder& b, std::vector<ir::value*> inputs, int trans_a, int trans_b,
                std::vector<std::int64_t> out_dims) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("alpha", 0.5f));
  attrs.push_back(ir::attribute::make_float("beta", 2.0f));
  attrs.push_back(ir::attribute::make_int("transA", trans_a));
  attrs.push_back(ir::attribute::make_int("transB", trans_b));
  ir::value* y = b.op("Gemm", std::move(inputs), std::move(attrs));
  y->set_type(test::float_type(std::move(out_dims)));
  return y;
}

}  // namespace

TEST_CASE("fuse-gemm-transpose absorbs Transposes feeding Gemm's A and B", "[fusion][fuse-gemm-transpose]") {
  const int trans_a = GENERATE(0, 1);
  const int trans_b = GENERATE(0, 1);
  const bool through_a = GENERATE(false, true);
  const bool through_b = GENERATE(false, true);
  if (!through_a && !through_b) return;
  CAPTURE(trans_a, trans_b, through_a, through_b);
  ir::model m = ir::make_model("gemm_inputs");
  ir::graph_builder b(m.graph());
  // The stored operand before the Transpose: A is [4, 8] as Gemm reads it, B is [8, 6].
  const bool a_stored_flipped = (trans_a != 0) != through_a;
  const bool b_stored_flipped = (trans_b != 0) != through_b;
  ir::value* a = b.input("a", ir::data_type::float32, a_stored_flipped ? ir::shape{8, 4} : ir::shape{4, 8});
  ir::value* w = b.random_constant("w", b_stored_flipped ? std::vector<std::int64_t>{6, 8} : std::vector<std::int64_t>{8, 6}, 0.5f);
  ir::value* y = gemm(b, {through_a ? transpose(b, a) : a, through_b ? transpose(b, w) : w,
                          b.random_constant("c", {6}, 0.5f)},
                      trans_a, trans_b, {4, 6});
  b.output(y);

  pass_record r = run_and_compare(m);
  CHECK(r.counters.at("transposes-absorbed") == (through_a ? 1 : 0) + (through_b ? 1 : 0));
  CHECK(test::count_ops(m.graph(), "Transpose") == 0);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-gemm-transpose keeps a Transpose that has other readers", "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("shared_transpose");
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {8, 4});
  ir::value* at = transpose(b, a);
  b.output(gemm(b, {at, b.random_constant("w", {8, 6}, 0.5f)}, 0, 0, {4, 6}));
  b.output(b.relu(at));

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Transpose") == 1);
  CHECK(m.graph().outputs()[0]->producer()->input(0) == a);
}

TEST_CASE("fuse-gemm-transpose absorbs a Transpose without perm on a known matrix", "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("no_perm");
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {8, 4});
  b.output(gemm(b, {b.op("Transpose", {a}), b.random_constant("w", {8, 6}, 0.5f)}, 0, 0, {4, 6}));
  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Transpose") == 0);
}

TEST_CASE("fuse-gemm-transpose folds a Transpose of the Gemm's output by swapping its operands",
          "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("gemm_output");
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
  ir::value* w = b.random_constant("w", {6, 8}, 0.5f);
  std::vector<ir::value*> inputs{a, w};
  SECTION("no C") {}
  SECTION("a scalar C") { inputs.push_back(b.random_constant("c", {}, 0.5f)); }
  SECTION("a single-element C that is not constant") { inputs.push_back(b.input("c", ir::data_type::float32, {1, 1})); }
  SECTION("a constant C of [N]") { inputs.push_back(b.random_constant("c", {6}, 0.5f)); }
  SECTION("a constant C of [M, 1]") { inputs.push_back(b.random_constant("c", {4, 1}, 0.5f)); }
  SECTION("a constant C of [M, N]") { inputs.push_back(b.random_constant("c", {4, 6}, 0.5f)); }
  ir::value* z = transpose(b, gemm(b, inputs, 0, 1, {4, 6}));
  z->set_type(test::float_type({6, 4}));
  b.output(z);
  const std::vector<std::string> names = test::output_names(m.graph());

  pass_record r = run_and_compare(m);
  CHECK(r.counters.at("output-transposes-folded") == 1);
  CHECK(test::count_ops(m.graph(), "Transpose") == 0);
  CHECK(test::output_names(m.graph()) == names);
  ir::node* g = m.graph().outputs()[0]->producer();
  REQUIRE(g->is("Gemm"));
  CHECK(g->input(0) == w);
  CHECK(g->input(1) == a);
  CHECK(g->attr_int("transA", 0) == 0);
  CHECK(g->attr_int("transB", 0) == 1);
  CHECK(m.graph().outputs()[0]->type() == test::float_type({6, 4}));
}

TEST_CASE("fuse-gemm-transpose turns a MatMul with a transposed operand into Gemm", "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("matmul");
  ir::graph_builder b(m.graph());
  SECTION("transposed A") {
    ir::value* a = b.input("a", ir::data_type::float32, {8, 4});
    b.output(b.matmul(transpose(b, a), b.random_constant("w", {8, 6}, 0.5f)));
  }
  SECTION("transposed B") {
    ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
    b.output(b.matmul(a, transpose(b, b.random_constant("w", {6, 8}, 0.5f))));
  }
  SECTION("both transposed") {
    ir::value* a = b.input("a", ir::data_type::float32, {8, 4});
    b.output(b.matmul(transpose(b, a), transpose(b, b.input("w", ir::data_type::float32, {6, 8}))));
  }
  pass_record r = run_and_compare(m);
  CHECK(r.counters.at("matmuls-became-gemm") == 1);
  CHECK(test::count_ops(m.graph(), "MatMul") == 0);
  CHECK(test::count_ops(m.graph(), "Transpose") == 0);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
}

TEST_CASE("fuse-gemm-transpose declines Transposes that are not matrix transposes", "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("not_matrix");
  ir::graph_builder b(m.graph());
  ir::value* w = b.random_constant("w", {8, 6}, 0.5f);
  SECTION("identity perm") {
    ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
    b.output(gemm(b, {transpose(b, a, {0, 1}), w}, 0, 0, {4, 6}));
  }
  SECTION("no perm on an input of unknown rank") {
    ir::value* a = b.relu(b.input("a", ir::data_type::float32, {8, 4}));
    a->set_type(std::nullopt);
    b.output(gemm(b, {b.op("Transpose", {a}), w}, 0, 0, {4, 6}));
  }
  SECTION("another domain") {
    ir::value* a = b.input("a", ir::data_type::float32, {8, 4});
    ir::value* at = transpose(b, a);
    at->producer()->set_domain("com.example");
    b.output(gemm(b, {at, w}, 0, 0, {4, 6}));
  }
  require_declined(m);
}

TEST_CASE("fuse-gemm-transpose declines an output Transpose when C cannot be transposed",
          "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("bias_input", 17);
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
  ir::value* c = b.input("c", ir::data_type::float32, {6});
  b.output(transpose(b, gemm(b, {a, b.random_constant("w", {8, 6}, 0.5f), c}, 0, 0, {4, 6})));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-bias") == 1);
}

TEST_CASE("fuse-gemm-transpose declines an output Transpose before opset 7", "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("old", 6);
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
  b.output(transpose(b, gemm(b, {a, b.random_constant("w", {8, 6}, 0.5f), b.random_constant("c", {4, 6}, 0.5f)},
                              0, 0, {4, 6})));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-opset") == 1);
}

TEST_CASE("fuse-gemm-transpose declines an output Transpose when the Gemm output has another reader",
          "[fusion][fuse-gemm-transpose]") {
  ir::model m = ir::make_model("readers");
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", ir::data_type::float32, {4, 8});
  ir::value* y = gemm(b, {a, b.random_constant("w", {8, 6}, 0.5f)}, 0, 0, {4, 6});
  b.output(transpose(b, y));
  SECTION("second reader") { b.output(b.relu(y)); }
  SECTION("graph output") { b.output(y); }
  require_declined(m);
}

TEST_CASE("fuse-gemm-transpose declines a MatMul it cannot turn into Gemm", "[fusion][fuse-gemm-transpose]") {
  std::int64_t opset = 17;
  std::string reason;
  std::vector<std::int64_t> a_dims{4, 8};
  ir::data_type type = ir::data_type::float32;
  SECTION("opset 10: Gemm needs C") {
    opset = 10;
    reason = "declined-opset";
  }
  SECTION("batched A") {
    a_dims = {2, 4, 8};
    reason = "declined-rank";
  }
  SECTION("integer operands") {
    type = ir::data_type::int64;
    reason = "declined-type";
  }
  CAPTURE(reason);
  ir::model m = ir::make_model("matmul", opset);
  ir::graph_builder b(m.graph());
  ir::value* a = b.input("a", type, ir::shape(a_dims.begin(), a_dims.end()));
  ir::value* w = b.input("w", type, {6, 8});
  b.output(b.op("MatMul", {a, transpose(b, w)}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at(reason) == 1);
}
