// eliminate-common-subexpressions: nodes with the same op, attributes and inputs are merged.
//
// Numbers are checked with require_same_outputs at its default rtol 1e-4; the kept node
// computes exactly what the removed one did, so outputs must match exactly.

#include "inferopt/fusion/eliminate_common_subexpressions.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("eliminate-common-subexpressions");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

std::vector<ir::attribute> attrs(ir::attribute a) {
  std::vector<ir::attribute> out;
  out.push_back(std::move(a));
  return out;
}

}  // namespace

TEST_CASE("eliminate-common-subexpressions merges duplicated chains in one run", "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("cse");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::node* a1 = test::add_op(g, "LeakyRelu", {x}, "a1", {}, attrs(ir::attribute::make_float("alpha", 0.2f)));
  ir::node* a2 = test::add_op(g, "LeakyRelu", {x}, "a2", {}, attrs(ir::attribute::make_float("alpha", 0.2f)));
  ir::node* b1 = test::add_op(g, "Sigmoid", {a1->output(0)}, "b1");
  ir::node* b2 = test::add_op(g, "Sigmoid", {a2->output(0)}, "b2");
  ir::node* sum = test::add_op(g, "Add", {b1->output(0), b2->output(0)}, "sum");
  g.add_output(sum->output(0));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.counters.at("nodes-merged") == 2);
  CHECK(g.node_count() == 3);
  CHECK(sum->input(0) == b1->output(0));
  CHECK(sum->input(1) == b1->output(0));
  test::require_same_outputs(before, m);
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("eliminate-common-subexpressions merges equal constants so their readers merge too",
          "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("constants");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3});
  ir::value* r1 = b.reshape(x, {3, 2});
  ir::value* r2 = b.reshape(x, {3, 2});  // its own copy of the shape constant
  b.output(b.add(r1, r2));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.counters.at("initializers-merged") == 1);
  CHECK(r.counters.at("nodes-merged") == 1);
  CHECK(test::count_ops(m.graph(), "Reshape") == 1);
  CHECK(m.graph().initializers().size() == 1);
  test::require_same_outputs(before, m);
}

TEST_CASE("eliminate-common-subexpressions hands a duplicate's graph output name to the kept node",
          "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("outputs");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::node* a = test::add_op(g, "Relu", {x}, "a");
  ir::node* b = test::add_op(g, "Relu", {x}, "b", {"y"});
  ir::node* neg = test::add_op(g, "Neg", {a->output(0)}, "neg");
  g.add_output(neg->output(0));
  g.add_output(b->output(0));
  const ir::model before = copy_of(m);
  run(m);
  CHECK(g.node_count() == 2);
  CHECK(test::output_names(g) == std::vector<std::string>{"neg_out", "y"});
  CHECK(g.outputs()[1]->producer() == a);
  CHECK(neg->input(0) == g.outputs()[1]);
  test::require_same_outputs(before, m);
}

TEST_CASE("eliminate-common-subexpressions keeps a duplicate when both outputs are graph outputs",
          "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("two_outputs");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::node* a = test::add_op(g, "Relu", {x}, "a", {"y1"});
  ir::node* b = test::add_op(g, "Relu", {x}, "b", {"y2"});
  ir::node* neg = test::add_op(g, "Neg", {b->output(0)}, "neg");
  g.add_output(a->output(0));
  g.add_output(b->output(0));
  g.add_output(neg->output(0));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(g.node_count() == 3);
  CHECK(neg->input(0) == a->output(0));
  CHECK(test::output_names(g) == std::vector<std::string>{"y1", "y2", "neg_out"});
  test::require_same_outputs(before, m);
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("eliminate-common-subexpressions declines nodes that differ or may differ", "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("differ");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::value* z = g.add_input("z", test::float_type({2, 3}));
  std::vector<ir::node*> pair;
  SECTION("different attributes") {
    pair = {test::add_op(g, "LeakyRelu", {x}, "a", {}, attrs(ir::attribute::make_float("alpha", 0.2f))),
            test::add_op(g, "LeakyRelu", {x}, "b", {}, attrs(ir::attribute::make_float("alpha", 0.3f)))};
  }
  SECTION("inputs in another order") {
    pair = {test::add_op(g, "Sub", {x, z}, "a"), test::add_op(g, "Sub", {z, x}, "b")};
  }
  SECTION("another domain") {
    pair = {test::add_op(g, "Relu", {x}, "a"), test::add_op(g, "Relu", {x}, "b", {}, {}, "com.microsoft")};
  }
  SECTION("an unknown domain") {
    pair = {test::add_op(g, "Custom", {x}, "a", {}, {}, "com.example"),
            test::add_op(g, "Custom", {x}, "b", {}, {}, "com.example")};
  }
  SECTION("random ops") {
    pair = {test::add_op(g, "RandomUniformLike", {x}, "a"), test::add_op(g, "RandomUniformLike", {x}, "b")};
  }
  SECTION("Dropout in training mode") {
    ir::value* training = g.add_initializer("training", test::bool_scalar(true));
    ir::graph_builder b(g);
    ir::value* ratio = b.constant("ratio", {}, {0.5f});
    pair = {test::add_op(g, "Dropout", {x, ratio, training}, "a"), test::add_op(g, "Dropout", {x, ratio, training}, "b")};
  }
  SECTION("nodes holding subgraphs") {
    ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    pair = {test::add_if_with_identities(g, cond, x, "if1"), test::add_if_with_identities(g, cond, x, "if2")};
  }
  for (ir::node* n : pair) g.add_output(n->output(0));
  require_declined(m);
}

TEST_CASE("eliminate-common-subexpressions does not merge initializers that are graph inputs",
          "[fusion][eliminate-common-subexpressions]") {
  ir::model m = ir::make_model("overridable");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::value* w1 = g.add_input("w1", test::float_type({2}));
  ir::value* w2 = g.add_input("w2", test::float_type({2}));
  g.set_initializer(w1, ir::tensor::from_values<float>("", {2}, std::vector<float>{1.0f, 2.0f}));
  g.set_initializer(w2, ir::tensor::from_values<float>("", {2}, std::vector<float>{1.0f, 2.0f}));
  ir::node* a = test::add_op(g, "Mul", {x, w1}, "a");
  ir::node* b = test::add_op(g, "Mul", {x, w2}, "b");
  g.add_output(a->output(0));
  g.add_output(b->output(0));
  require_declined(m);
}
