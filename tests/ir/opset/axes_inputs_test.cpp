#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

/// x -> Unsqueeze(axes=[0]) -> ReduceSum(axes=[2], keepdims=0) -> ReduceMean(axes=[1]) -> Squeeze(axes=[0])
ir::model axes_chain(std::int64_t opset) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {2, 3, 4});
  ir::value* u = b.node("Unsqueeze", {x}, ir::attribute_list(ir::attribute::make_ints("axes", {0})))->output(0);
  ir::value* s = b.node("ReduceSum", {u}, ir::attribute_list(ir::attribute::make_ints("axes", {2}), ir::attribute::make_int("keepdims", 0)))->output(0);
  ir::value* m = b.node("ReduceMean", {s}, ir::attribute_list(ir::attribute::make_ints("axes", {2})))->output(0);
  b.output_of(b.node("Squeeze", {m}, ir::attribute_list(ir::attribute::make_ints("axes", {0}))));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("axes move from attributes to constant inputs going up and back going down", "[ir][convert-opset][axes]") {
  const ir::model before = axes_chain(11);
  ir::opset_conversion_report r;
  const ir::model up = test::converted(before, 18, &r);
  for (const char* op : {"Unsqueeze", "ReduceSum", "ReduceMean", "Squeeze"}) {
    CAPTURE(op);
    const ir::node* n = test::first(up.graph(), op);
    CHECK_FALSE(n->find_attribute("axes"));
    REQUIRE(n->inputs().size() == 2);
  }
  CHECK(test::ints_at(test::first(up.graph(), "Unsqueeze"), 1) == std::vector<std::int64_t>{0});
  CHECK(test::ints_at(test::first(up.graph(), "ReduceSum"), 1) == std::vector<std::int64_t>{2});
  CHECK(r.changed_nodes.at("axes-attribute-to-input") == 4);
  // Only where the data goes changes, not the arithmetic: the outputs are equal.
  CHECK(test::max_difference(before, up) == 0.0);

  const ir::model down = test::converted(up, 11);
  for (const char* op : {"Unsqueeze", "ReduceSum", "ReduceMean", "Squeeze"}) {
    CAPTURE(op);
    const ir::node* n = test::first(down.graph(), op);
    CHECK(n->inputs().size() == 1);
    CHECK(n->find_attribute("axes"));
  }
  CHECK(test::max_difference(before, down) == 0.0);
}

TEST_CASE("axes crossing only the versions an op changed at stay where they are", "[ir][convert-opset][axes]") {
  // ReduceMean keeps its attribute until 18, ReduceSum moves at 13.
  const ir::model up = test::converted(axes_chain(11), 13);
  CHECK(test::first(up.graph(), "ReduceMean")->find_attribute("axes"));
  CHECK_FALSE(test::first(up.graph(), "ReduceSum")->find_attribute("axes"));
}

TEST_CASE("axes that are not a constant cannot go down to an attribute", "[ir][convert-opset][axes]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {1, 3});
  ir::value* axes = b.input("axes", {1}, ir::data_type::int64);
  b.output_of(b.node("Squeeze", {x, axes}));
  const auto e = test::conversion_error(b.m, 12);
  REQUIRE(e);
  CHECK_THAT(*e, Catch::Contains("node 'Squeeze_0' (Squeeze)") && Catch::Contains("must be a constant"));
}

TEST_CASE("noop_with_empty_axes without axes is refused going down", "[ir][convert-opset][axes]") {
  test::opset_model b(18);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("ReduceMax", {x}, ir::attribute_list(ir::attribute::make_int("noop_with_empty_axes", 1))));
  const auto e = test::conversion_error(b.m, 17);
  REQUIRE(e);
  CHECK_THAT(*e, Catch::Contains("noop_with_empty_axes"));
}
