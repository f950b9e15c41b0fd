#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Clip's bounds become inputs of the input's type at opset 11", "[ir][convert-opset][clip]") {
  test::opset_model b(10);
  ir::value* x = b.input("x", {3, 4});
  b.output_of(b.node("Clip", {x}, ir::attribute_list(ir::attribute::make_float("min", -0.5f), ir::attribute::make_float("max", 0.5f))));
  const ir::model up = test::converted(b.m, 13);
  const ir::node* c = test::first(up.graph(), "Clip");
  REQUIRE(c->inputs().size() == 3);
  CHECK(c->input(1)->initializer()->values<float>() == std::vector<float>{-0.5f});
  CHECK(c->input(2)->initializer()->values<float>() == std::vector<float>{0.5f});
  CHECK(test::max_difference(b.m, up) == 0.0);
  const ir::model down = test::converted(up, 10);
  CHECK(test::first(down.graph(), "Clip")->attr_float("max", 0.0f) == 0.5f);
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("Clip with one bound gets one input and leaves the other omitted", "[ir][convert-opset][clip]") {
  test::opset_model b(10);
  ir::value* x = b.input("x", {3});
  b.output_of(b.node("Clip", {x}, ir::attribute_list(ir::attribute::make_float("max", 1.0f))));
  const ir::model up = test::converted(b.m, 11);
  const ir::node* c = test::first(up.graph(), "Clip");
  CHECK(c->input(1) == nullptr);
  CHECK(c->input(2) != nullptr);
}

TEST_CASE("Clip of an input of unknown element type is refused going up", "[ir][convert-opset][clip]") {
  test::opset_model b(10);
  ir::value* x = b.m.graph().add_input("x", std::nullopt);
  b.output_of(b.node("Clip", {x}, ir::attribute_list(ir::attribute::make_float("min", 0.0f))));
  CHECK_THAT(test::conversion_error(b.m, 11).value_or(""), Catch::Contains("element type of 'x'"));
}
