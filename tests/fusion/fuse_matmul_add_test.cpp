// fuse-matmul-add: a 2-D MatMul and the Add of a broadcastable bias become one Gemm.
//
// Numbers: checked against the unfused model in our executor at rtol 1e-4. The Gemm adds C
// before accumulating the product instead of after, a change of rounding order only (a few
// float32 ulps), far inside 1e-4.

#include "inferopt/fusion/fuse_matmul_add.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-matmul-add");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record run_and_compare(ir::model& m) { return checker.run_and_compare(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

}  // namespace

TEST_CASE("fuse-matmul-add turns a dense layer into one Gemm", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("dense");
  ir::graph_builder b(m.graph());
  b.output(b.dense(b.input("x", ir::data_type::float32, {4, 8}), 6));

  pass_record r = run_and_compare(m);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("matmul-adds-fused") == 1);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-matmul-add accepts every unidirectional broadcast of C and either Add operand order",
          "[fusion][fuse-matmul-add]") {
  const std::vector<std::int64_t> c_dims = GENERATE(std::vector<std::int64_t>{}, std::vector<std::int64_t>{1},
                                                    std::vector<std::int64_t>{6}, std::vector<std::int64_t>{1, 6},
                                                    std::vector<std::int64_t>{4, 1}, std::vector<std::int64_t>{4, 6});
  const bool c_first = GENERATE(false, true);
  CAPTURE(c_dims, c_first);
  ir::model m = ir::make_model("bias_shapes");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = b.matmul(x, b.random_constant("w", {8, 6}, 0.5f));
  ir::value* c = b.random_constant("c", c_dims, 0.5f);
  b.output(c_first ? b.add(c, y) : b.add(y, c));

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(m.graph().node_count() == 1);
}

TEST_CASE("fuse-matmul-add takes a computed bias, moving the Gemm after it", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("computed_bias");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* w = b.input("w", ir::data_type::float32, {8, 6});  // a non-constant B is fine too
  ir::value* y = b.matmul(x, w);
  ir::value* c = b.relu(b.input("c", ir::data_type::float32, {1, 6}));  // computed after the MatMul
  b.output(b.add(y, c));

  run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(m.graph().node_count() == 2);
}

TEST_CASE("fuse-matmul-add keeps the Add's graph output name", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("names");
  ir::graph_builder b(m.graph());
  b.output(b.dense(b.input("x", ir::data_type::float32, {4, 8}), 6));
  const std::vector<std::string> names = test::output_names(m.graph());
  run_and_compare(m);
  CHECK(test::output_names(m.graph()) == names);
  CHECK(m.graph().outputs()[0]->producer()->is("Gemm"));
}

TEST_CASE("fuse-matmul-add declines before opset 7", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("old", 6);
  ir::graph_builder b(m.graph());
  b.output(b.dense(b.input("x", ir::data_type::float32, {4, 8}), 6));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-opset") == 1);
}

TEST_CASE("fuse-matmul-add declines operands not known to be matrices", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("rank");
  ir::graph_builder b(m.graph());
  ir::value* w = b.random_constant("w", {8, 6}, 0.5f);
  ir::value* c = b.random_constant("c", {6}, 0.5f);
  SECTION("3-D A with a symbolic dim") {
    b.output(b.add(b.matmul(b.input("x", ir::data_type::float32, {"batch", 4, 8}), w), c));
  }
  SECTION("1-D A") { b.output(b.add(b.matmul(b.input("x", ir::data_type::float32, {8}), w), c)); }
  SECTION("A of unknown rank") {
    ir::value* x = b.relu(b.input("x", ir::data_type::float32, {4, 8}));
    x->set_type(std::nullopt);
    b.output(b.add(b.matmul(x, w), c));
  }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-rank") == 1);
}

TEST_CASE("fuse-matmul-add declines a bias that would widen the output or whose shape is unknown",
          "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("widen");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4, 8});
  ir::value* y = b.matmul(x, b.random_constant("w", {8, 6}, 0.5f));
  SECTION("rank-3 C") { b.output(b.add(y, b.random_constant("c", {1, 1, 6}, 0.5f))); }
  SECTION("C of unknown shape") {
    ir::value* c = b.relu(b.input("c", ir::data_type::float32, {6}));
    c->set_type(std::nullopt);
    b.output(b.add(y, c));
  }
  SECTION("C rows against an unknown M") {
    ir::value* xs = b.input("xs", ir::data_type::float32, {"batch", 8});
    ir::value* ys = b.matmul(xs, b.random_constant("w2", {8, 6}, 0.5f));
    ys->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{"batch", 6}});
    b.output(b.op("Add", {ys, b.random_constant("c", {4, 6}, 0.5f)}));
    b.output(y);
  }
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-shape") == 1);
}

TEST_CASE("fuse-matmul-add declines a MatMul with another reader", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("users");
  ir::graph_builder b(m.graph());
  ir::value* y = b.matmul(b.input("x", ir::data_type::float32, {4, 8}), b.random_constant("w", {8, 6}, 0.5f));
  b.output(b.add(y, b.random_constant("c", {6}, 0.5f)));
  SECTION("second reader") { b.output(b.relu(y)); }
  SECTION("graph output") { b.output(y); }
  require_declined(m);
}

TEST_CASE("fuse-matmul-add declines integer operands", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("ints");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::int64, {4, 8});
  ir::value* w = b.constant_i64("w", {8, 6}, std::vector<std::int64_t>(48, 2));
  ir::value* y = b.op("MatMul", {x, w});
  y->set_type(ir::value_type{true, ir::data_type::int64, ir::shape{4, 6}});
  b.output(b.op("Add", {y, b.constant_i64("c", {6}, std::vector<std::int64_t>(6, 1))}));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-type") == 1);
}

TEST_CASE("fuse-matmul-add flattens a batched A with static dims around one Gemm", "[fusion][fuse-matmul-add]") {
  const std::vector<std::int64_t> c_dims =
      GENERATE(std::vector<std::int64_t>{6}, std::vector<std::int64_t>{1, 6}, std::vector<std::int64_t>{1, 1, 6},
               std::vector<std::int64_t>{1});
  CAPTURE(c_dims);
  ir::model m = ir::make_model("batched");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4, 8});
  ir::value* y = b.matmul(x, b.random_constant("w", {8, 6}, 0.5f));
  ir::value* z = b.add(y, b.random_constant("c", c_dims, 0.5f));
  b.output(b.relu(z));
  const std::string z_name = z->name();

  pass_record r = run_and_compare(m);
  CHECK(r.counters.at("batched-matmul-adds-fused") == 1);
  CHECK(test::count_ops(m.graph(), "Gemm") == 1);
  CHECK(test::count_ops(m.graph(), "Reshape") == 2);
  CHECK(test::count_ops(m.graph(), "MatMul") == 0);
  CHECK(test::count_ops(m.graph(), "Add") == 0);
  REQUIRE(m.graph().find_value(z_name));
  CHECK(m.graph().find_value(z_name)->producer()->is("Reshape"));
}

TEST_CASE("fuse-matmul-add declines a batched A whose bias varies along the rows", "[fusion][fuse-matmul-add]") {
  ir::model m = ir::make_model("batched_rows");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 4, 8});
  b.output(b.add(b.matmul(x, b.random_constant("w", {8, 6}, 0.5f)), b.random_constant("c", {4, 6}, 0.5f)));
  pass_record r = require_declined(m);
  CHECK(r.counters.at("declined-shape") == 1);
}
