// eliminate-noop: removes nodes whose output equals one of their inputs.
//
// Numbers are checked with require_same_outputs at its default rtol 1e-4; a removed no-op
// changes no value, so the outputs must in fact match exactly.

#include "inferopt/fusion/eliminate_noop.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("eliminate-noop");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

std::vector<ir::attribute> attrs(ir::attribute a) {
  std::vector<ir::attribute> out;
  out.push_back(std::move(a));
  return out;
}

/// x[2,3,4] -> Relu (typed) -> <op under test, built by the caller> -> Sigmoid -> graph output.
struct harness {
  ir::model m;
  ir::graph_builder b;
  ir::value* relu = nullptr;
  explicit harness(std::int64_t opset = 17) : m(ir::make_model("noop", opset)), b(m.graph()) {
    relu = b.relu(b.input("x", ir::data_type::float32, {2, 3, 4}));
  }
  /// Adds `op(relu, extra...)` and a Neg after it.
  ir::node* add(const std::string& op, std::vector<ir::value*> extra = {}, std::vector<ir::attribute> a = {}) {
    std::vector<ir::value*> inputs{relu};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    ir::node* n = test::add_op(m.graph(), op, std::move(inputs), "under_test", {}, std::move(a));
    b.output(b.sigmoid(n->output(0)));
    return n;
  }
};

}  // namespace

TEST_CASE("eliminate-noop removes each kind of no-op", "[fusion][eliminate-noop]") {
  harness h;
  ir::node* n = nullptr;
  SECTION("Pad with zero pads, input form") { n = h.add("Pad", {h.b.constant_i64("pads", {6}, {0, 0, 0, 0, 0, 0})}); }
  SECTION("Cast to the same type") { n = h.add("Cast", {}, attrs(ir::attribute::make_int("to", 1))); }
  SECTION("Reshape to the same shape with 0 and -1") { n = h.add("Reshape", {h.b.constant_i64("s", {3}, {0, -1, 4})}); }
  SECTION("Transpose with the identity perm") {
    n = h.add("Transpose", {}, attrs(ir::attribute::make_ints("perm", {0, 1, 2})));
  }
  SECTION("Slice over the whole tensor") {
    n = h.add("Slice", {h.b.constant_i64("st", {2}, {0, -100}), h.b.constant_i64("en", {2}, {INT64_MAX, 4}),
                        h.b.constant_i64("ax", {2}, {0, -1}), h.b.constant_i64("sp", {2}, {1, 1})});
  }
  SECTION("Concat of one input") { n = h.add("Concat", {}, attrs(ir::attribute::make_int("axis", 1))); }
  SECTION("Expand to a shape the input already has") { n = h.add("Expand", {h.b.constant_i64("e", {2}, {1, 4})}); }
  SECTION("Mul by ones") { n = h.add("Mul", {h.b.constant("one", {3, 1}, {1.0f, 1.0f, 1.0f})}); }
  SECTION("Add of zeros, constant first") {
    ir::value* zero = h.b.constant("zero", {4}, {0.0f, 0.0f, 0.0f, 0.0f});
    n = h.add("Identity");  // replaced just below by Add(zero, relu)
    ir::node* add = test::add_op(h.m.graph(), "Add", {zero, h.relu}, "add");
    h.m.graph().move_before(add, n);
    h.m.graph().set_input(n, 0, add->output(0));
    n = add;
  }
  const ir::model before = copy_of(h.m);
  pass_record r = run(h.m);
  CHECK(r.changed);
  CHECK(r.counters.at("noops-removed") >= 1);
  CHECK(n->is_dead());
  test::require_same_outputs(before, h.m);
}

TEST_CASE("eliminate-noop reads Pad and Slice operands in their pre-input opset forms", "[fusion][eliminate-noop]") {
  harness h(9);
  ir::node* n = nullptr;
  SECTION("Pad with a zero pads attribute") { n = h.add("Pad", {}, attrs(ir::attribute::make_ints("pads", {0, 0, 0, 0, 0, 0}))); }
  SECTION("Slice with attributes") {
    std::vector<ir::attribute> a;
    a.push_back(ir::attribute::make_ints("starts", {0}));
    a.push_back(ir::attribute::make_ints("ends", {10}));
    a.push_back(ir::attribute::make_ints("axes", {2}));
    n = h.add("Slice", {}, std::move(a));
  }
  const ir::model before = copy_of(h.m);
  run(h.m);
  CHECK(n->is_dead());
  test::require_same_outputs(before, h.m);
}

TEST_CASE("eliminate-noop declines nodes that change something", "[fusion][eliminate-noop]") {
  harness h;
  SECTION("Pad with a non-zero pad") { h.add("Pad", {h.b.constant_i64("pads", {6}, {0, 0, 1, 0, 0, 0})}); }
  SECTION("Pad with pads that are not constant") {
    h.add("Pad", {h.m.graph().add_input("pads", ir::value_type{true, ir::data_type::int64, ir::shape{6}})});
  }
  SECTION("Cast to another type") { h.add("Cast", {}, attrs(ir::attribute::make_int("to", 11))); }
  SECTION("Reshape to another shape") { h.add("Reshape", {h.b.constant_i64("s", {3}, {3, 2, 4})}); }
  SECTION("Reshape with a literal 0 under allowzero") {
    h.add("Reshape", {h.b.constant_i64("s", {3}, {0, 3, 4})}, attrs(ir::attribute::make_int("allowzero", 1)));
  }
  SECTION("Transpose with another perm") { h.add("Transpose", {}, attrs(ir::attribute::make_ints("perm", {0, 2, 1}))); }
  SECTION("Transpose with an omitted perm") { h.add("Transpose"); }
  SECTION("Slice that drops the last element") {
    h.add("Slice", {h.b.constant_i64("st", {1}, {0}), h.b.constant_i64("en", {1}, {-1})});
  }
  SECTION("Slice with step 2") {
    h.add("Slice", {h.b.constant_i64("st", {1}, {0}), h.b.constant_i64("en", {1}, {10}), h.b.constant_i64("ax", {1}, {0}),
                    h.b.constant_i64("sp", {1}, {2})});
  }
  SECTION("Expand that broadcasts") { h.add("Expand", {h.b.constant_i64("e", {4}, {5, 1, 1, 1})}); }
  SECTION("Mul by a constant that is not all ones") { h.add("Mul", {h.b.constant("c", {1}, {2.0f})}); }
  SECTION("Mul by ones that broadcast to a larger shape") {
    h.add("Mul", {h.b.constant("c", {2, 1, 1, 1}, {1.0f, 1.0f})});
  }
  SECTION("Add of zeros of another type") {
    ir::tensor t = ir::tensor::from_values<double>("", {1}, std::vector<double>{0.0});
    h.add("Add", {h.m.graph().add_initializer("zero64", std::move(t))});
  }
  require_declined(h.m);
}

TEST_CASE("eliminate-noop declines ops whose input type or shape is unknown", "[fusion][eliminate-noop]") {
  ir::model m = ir::make_model("unknown");
  ir::graph_builder b(m.graph());
  ir::value* x = b.op("Relu", {b.input("x", ir::data_type::float32, {2, 3})});  // untyped output
  SECTION("Cast") { b.output(b.sigmoid(b.op("Cast", {x}, attrs(ir::attribute::make_int("to", 1))))); }
  SECTION("Reshape") { b.output(b.sigmoid(b.op("Reshape", {x, b.constant_i64("s", {2}, {2, 3})}))); }
  SECTION("Mul") { b.output(b.sigmoid(b.op("Mul", {x, b.constant("one", {}, {1.0f})}))); }
  require_declined(m);
}

TEST_CASE("eliminate-noop keeps a no-op that maps a graph input to a graph output", "[fusion][eliminate-noop]") {
  ir::model m = ir::make_model("passthrough");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::node* t = test::add_op(g, "Transpose", {x}, "t", {"y"}, attrs(ir::attribute::make_ints("perm", {0})));
  g.add_output(t->output(0));
  require_declined(m);
}

TEST_CASE("eliminate-noop keeps the output name of a removed no-op and is idempotent", "[fusion][eliminate-noop]") {
  ir::model m = ir::make_model("tail");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* c = test::add_op(g, "Concat", {relu->output(0)}, "c", {"y"}, attrs(ir::attribute::make_int("axis", 0)));
  g.add_output(c->output(0));
  const ir::model before = copy_of(m);
  run(m);
  CHECK(test::output_names(g) == std::vector<std::string>{"y"});
  CHECK(g.outputs()[0]->producer() == relu);
  test::require_same_outputs(before, m);
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}
