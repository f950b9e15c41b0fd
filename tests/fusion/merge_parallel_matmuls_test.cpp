// merge-parallel-matmuls: MatMuls on constant weights that read one activation become one
// MatMul and a Split, with the same outputs; shared weights, graph outputs and old opsets stay.

#include "inferopt/fusion/merge_parallel_matmuls.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("merge-parallel-matmuls");

}  // namespace

TEST_CASE("merge-parallel-matmuls packs three projections of one activation into one product", "[fusion][merge-parallel-matmuls]") {
  ir::model m = ir::make_model("qkv", 17);
  ir::graph_builder b(m.graph(), 11);
  ir::value* x = b.input("x", ir::data_type::float32, {2, 5, 8});
  ir::value* h = b.relu(x);
  ir::value* q = b.matmul(h, b.random_constant("Wq", {8, 6}, 0.5f));
  ir::value* k = b.matmul(h, b.random_constant("Wk", {8, 6}, 0.5f));
  ir::value* v = b.matmul(h, b.random_constant("Wv", {8, 4}, 0.5f));
  b.output(b.relu(q));
  b.output(b.tanh(k));
  b.output(b.sigmoid(v));
  const pass_record r = checker.run_and_compare(m);
  CHECK(r.counters.at("matmuls-merged") == 3);
  CHECK(test::count_ops(m.graph(), "MatMul") == 1);
  CHECK(test::count_ops(m.graph(), "Split") == 1);
  CHECK(m.graph().find_value("Wq") == nullptr);  // replaced by the packed copy
}

TEST_CASE("merge-parallel-matmuls leaves lone products, shared weights, graph outputs and opset 12", "[fusion][merge-parallel-matmuls]") {
  SECTION("one product per activation") {
    ir::model m = ir::make_model("lone", 17);
    ir::graph_builder b(m.graph(), 2);
    ir::value* x = b.input("x", ir::data_type::float32, {3, 8});
    b.output(b.relu(b.matmul(x, b.random_constant("W", {8, 4}, 0.5f))));
    b.output(b.relu(b.matmul(b.tanh(x), b.random_constant("W2", {8, 4}, 0.5f))));
    checker.require_declined(m);
  }
  SECTION("a weight another node reads too") {
    ir::model m = ir::make_model("shared", 17);
    ir::graph_builder b(m.graph(), 3);
    ir::value* x = b.input("x", ir::data_type::float32, {3, 8});
    ir::value* w = b.random_constant("W", {8, 8}, 0.5f);
    b.output(b.relu(b.matmul(x, w)));
    b.output(b.relu(b.matmul(x, b.random_constant("W2", {8, 8}, 0.5f))));
    b.output(b.relu(b.matmul(b.tanh(x), w)));
    checker.require_declined(m);
  }
  SECTION("a product that is a graph output") {
    ir::model m = ir::make_model("outputs", 17);
    ir::graph_builder b(m.graph(), 4);
    ir::value* x = b.input("x", ir::data_type::float32, {3, 8});
    b.output(b.matmul(x, b.random_constant("W", {8, 4}, 0.5f)));
    b.output(b.relu(b.matmul(x, b.random_constant("W2", {8, 4}, 0.5f))));
    checker.require_declined(m);
  }
  SECTION("opset 12, where Split takes no sizes input") {
    ir::model m = ir::make_model("old", 12);
    ir::graph_builder b(m.graph(), 5);
    ir::value* x = b.input("x", ir::data_type::float32, {3, 8});
    b.output(b.relu(b.matmul(x, b.random_constant("W", {8, 4}, 0.5f))));
    b.output(b.relu(b.matmul(x, b.random_constant("W2", {8, 4}, 0.5f))));
    checker.require_declined(m);
  }
}
