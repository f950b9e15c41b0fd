#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Constant's value_* attributes become a value tensor below opset 12, and Constant outputs count as constants", "[ir][convert-opset][constant]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {3});
  ir::value* c = b.node("Constant", {}, ir::attribute_list(ir::attribute::make_floats("value_floats", {1.0f, 2.0f, 3.0f})))->output(0);
  ir::value* axes = b.node("Constant", {}, ir::attribute_list(ir::attribute::make_ints("value_ints", {0})))->output(0);
  ir::value* sum = b.node("Add", {x, c})->output(0);
  b.output_of(b.node("Unsqueeze", {sum, axes}));
  const ir::model down = test::converted(b.m, 11);
  const ir::node* n = test::first(down.graph(), "Constant");
  REQUIRE(n->find_attribute("value"));
  CHECK(n->find_attribute("value")->tensors[0].values<float>() == std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK_FALSE(n->find_attribute("value_floats"));
  // A Constant node's output counts as a constant operand: the axes become an attribute.
  CHECK(test::first(down.graph(), "Unsqueeze")->attr_ints("axes", {}) == std::vector<std::int64_t>{0});
  CHECK(test::max_difference(b.m, down) == 0.0);
}
