// fuse-consecutive-reshapes: Reshape/Flatten/Squeeze/Unsqueeze chains become one Reshape, or
// none when a Squeeze and an Unsqueeze cancel.
//
// Numbers are checked with require_same_outputs at its default rtol 1e-4; these ops never
// change a value, so any difference would be a wrong shape (which the executor reports).

#include "inferopt/fusion/fuse_consecutive_reshapes.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("fuse-consecutive-reshapes");
using test::copy_of;
pass_record run(ir::model& m) { return checker.run(m); }
pass_record require_declined(ir::model& m) { return checker.require_declined(m); }

std::vector<ir::attribute> attrs(ir::attribute a) {
  std::vector<ir::attribute> out;
  out.push_back(std::move(a));
  return out;
}

/// Squeeze or Unsqueeze of `x` on `axes`, in the form of the model's opset.
ir::node* axes_op(ir::model& m, const std::string& op, ir::value* x, std::vector<std::int64_t> axes,
                  const std::string& name, std::vector<std::string> outputs = {}) {
  ir::graph& g = m.graph();
  if (m.opset("").value_or(0) < 13) {
    return test::add_op(g, op, {x}, name, std::move(outputs), attrs(ir::attribute::make_ints("axes", axes)));
  }
  ir::graph_builder b(g);
  ir::value* a = b.constant_i64(name + "_axes", {static_cast<std::int64_t>(axes.size())}, axes);
  return test::add_op(g, op, {x, a}, name, std::move(outputs));
}

}  // namespace

TEST_CASE("fuse-consecutive-reshapes merges Reshape -> Reshape into one Reshape", "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("reshapes");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* r1 = b.reshape(b.relu(x), {6, 4});
  ir::value* r2 = b.reshape(r1, {4, -1});
  b.output(b.sigmoid(r2));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(m.graph(), "Reshape") == 1);
  CHECK(r2->producer()->input(0)->producer()->is("Relu"));
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-reshapes resolves a 0 in the second target against the intermediate shape",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("zero");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* r1 = b.reshape(b.relu(x), {6, 4});
  SECTION("from the first Reshape's literal target") { r1->set_type(std::nullopt); }
  SECTION("from the intermediate's static type") {}
  ir::value* r2 = b.reshape(r1, {0, 2, 2});  // 0 copies y's 6, not x's 2
  b.output(b.sigmoid(r2));
  const ir::model before = copy_of(m);
  run(m);
  REQUIRE(test::count_ops(m.graph(), "Reshape") == 1);
  const ir::value* target = r2->producer()->input(1);
  CHECK(target->initializer()->values<std::int64_t>() == std::vector<std::int64_t>{6, 2, 2});
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-reshapes declines a 0 it cannot resolve", "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("zero");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* r1 = b.reshape(b.relu(x), {-1, 4});  // y's dim 0 is not a literal
  ir::value* r2 = b.reshape(r1, {0, 2, 2});
  b.output(b.sigmoid(r2));
  require_declined(m);
}

TEST_CASE("fuse-consecutive-reshapes keeps literal zeros with allowzero from opset 14",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("allowzero", 14);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {std::int64_t{2}, std::int64_t{0}, std::int64_t{4}});
  ir::value* r1 = b.reshape(b.relu(x), {-1});
  ir::value* r2 = b.reshape(r1, {4, 0});
  r2->producer()->set_attribute(ir::attribute::make_int("allowzero", 1));
  b.output(b.sigmoid(r2));
  run(m);
  CHECK(test::count_ops(m.graph(), "Reshape") == 1);
  CHECK(r2->producer()->attr_int("allowzero", 0) == 1);
  CHECK(r2->producer()->input(1)->initializer()->values<std::int64_t>() == std::vector<std::int64_t>{4, 0});
}

TEST_CASE("fuse-consecutive-reshapes turns Flatten -> Unsqueeze with a static result into one Reshape",
          "[fusion][fuse-consecutive-reshapes]") {
  const std::int64_t opset = GENERATE(11, 13);
  CAPTURE(opset);
  ir::model m = ir::make_model("flatten", opset);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* flat = b.flatten(b.relu(x), 1);
  ir::node* unsq = axes_op(m, "Unsqueeze", flat, {1}, "unsq");
  unsq->output(0)->set_type(test::float_type({2, 1, 12}));
  ir::node* neg = test::add_op(m.graph(), "Neg", {unsq->output(0)}, "neg");
  m.graph().add_output(neg->output(0));
  const ir::model before = copy_of(m);
  run(m);
  CHECK(test::count_ops(m.graph(), "Flatten") == 0);
  CHECK(test::count_ops(m.graph(), "Unsqueeze") == 0);
  REQUIRE(unsq->is("Reshape"));
  CHECK(unsq->inputs().size() == 2);
  CHECK(unsq->input(1)->initializer()->values<std::int64_t>() == std::vector<std::int64_t>{2, 1, 12});
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-reshapes writes the target as an attribute before opset 5",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("old", 4);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 3, 4}));
  ir::node* r1 = test::add_op(g, "Reshape", {x}, "r1", {}, attrs(ir::attribute::make_ints("shape", {6, 4})));
  ir::node* r2 = test::add_op(g, "Reshape", {r1->output(0)}, "r2", {}, attrs(ir::attribute::make_ints("shape", {4, 6})));
  r2->output(0)->set_type(test::float_type({4, 6}));
  ir::node* neg = test::add_op(g, "Neg", {r2->output(0)}, "neg");
  g.add_output(neg->output(0));
  run(m);
  CHECK(test::count_ops(g, "Reshape") == 1);
  CHECK(r2->input(0) == x);
  CHECK(r2->inputs().size() == 1);
  CHECK(r2->attr_ints("shape", {}) == std::vector<std::int64_t>{4, 6});
}

TEST_CASE("fuse-consecutive-reshapes cancels Squeeze -> Unsqueeze and Unsqueeze -> Squeeze on the same axes",
          "[fusion][fuse-consecutive-reshapes]") {
  const std::int64_t opset = GENERATE(11, 13);
  const bool squeeze_first = GENERATE(true, false);
  CAPTURE(opset, squeeze_first);
  ir::model m = ir::make_model("cancel", opset);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2, 1, 4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  relu->output(0)->set_type(test::float_type({2, 1, 4}));
  // Negative axes count from the back of the wider tensor (rank 3 here, 4 for Unsqueeze first).
  ir::node* first = axes_op(m, squeeze_first ? "Squeeze" : "Unsqueeze", relu->output(0), {squeeze_first ? -2 : 3}, "first");
  ir::node* second = axes_op(m, squeeze_first ? "Unsqueeze" : "Squeeze", first->output(0), {squeeze_first ? 1 : -1},
                             "second", {"y"});
  g.add_output(second->output(0));
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.counters.at("shape-ops-cancelled") == 1);
  CHECK(g.node_count() == 1);
  CHECK(test::output_names(g) == std::vector<std::string>{"y"});
  CHECK(g.outputs()[0]->producer() == relu);
  test::require_same_outputs(before, m);
}

TEST_CASE("fuse-consecutive-reshapes declines Squeeze -> Unsqueeze on different or unknown axes",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("differ", 13);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({1, 2, 1}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  SECTION("different axes") {
    ir::node* sq = axes_op(m, "Squeeze", relu->output(0), {0}, "sq");
    ir::node* un = axes_op(m, "Unsqueeze", sq->output(0), {1}, "un");
    g.add_output(un->output(0));
  }
  SECTION("negative axes of unknown rank") {
    ir::node* sq = axes_op(m, "Squeeze", relu->output(0), {-1}, "sq");
    ir::node* un = axes_op(m, "Unsqueeze", sq->output(0), {-1}, "un");
    g.add_output(un->output(0));
  }
  SECTION("axes that are not constant") {
    ir::value* axes = g.add_input("axes", ir::value_type{true, ir::data_type::int64, ir::shape{1}});
    ir::node* sq = test::add_op(g, "Squeeze", {relu->output(0), axes}, "sq");
    ir::node* un = axes_op(m, "Unsqueeze", sq->output(0), {0}, "un");
    g.add_output(un->output(0));
  }
  SECTION("a Squeeze without axes") {
    ir::node* sq = test::add_op(g, "Squeeze", {relu->output(0)}, "sq");
    ir::node* un = axes_op(m, "Unsqueeze", sq->output(0), {0}, "un");
    g.add_output(un->output(0));
  }
  require_declined(m);
}

TEST_CASE("fuse-consecutive-reshapes declines a pair whose result shape is not static",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("dynamic");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {"batch", 3, 4});
  ir::value* flat = b.op("Flatten", {b.relu(x)});
  ir::value* y = b.op("Flatten", {flat});
  y->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{"batch", 12}});
  b.output(b.sigmoid(y));
  require_declined(m);
}

TEST_CASE("fuse-consecutive-reshapes declines ops of another domain", "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("domain");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* r1 = b.reshape(b.relu(x), {6, 4});
  ir::value* r2 = b.reshape(r1, {4, 6});
  r1->producer()->set_domain("com.example");
  b.output(b.sigmoid(r2));
  require_declined(m);
}

TEST_CASE("fuse-consecutive-reshapes keeps the first op for its other readers and is idempotent",
          "[fusion][fuse-consecutive-reshapes]") {
  ir::model m = ir::make_model("shared");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* r1 = b.reshape(b.relu(x), {6, 4});
  ir::value* r2 = b.reshape(r1, {3, 8});
  ir::value* r3 = b.reshape(r2, {24});
  b.output(b.sigmoid(r1));
  b.output(b.tanh(r3));
  const ir::model before = copy_of(m);
  run(m);
  CHECK(test::count_ops(m.graph(), "Reshape") == 2);
  CHECK_FALSE(r1->producer()->is_dead());
  CHECK(r3->producer()->input(0)->producer()->is("Relu"));
  test::require_same_outputs(before, m);
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}
