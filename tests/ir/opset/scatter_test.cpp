#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Scatter becomes ScatterElements at opset 11 and back below it", "[ir][convert-opset][scatter]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {3, 3});
  ir::value* indices = b.m.graph().add_initializer(
      "i", ir::tensor::from_values<std::int64_t>("i", {1, 3}, std::vector<std::int64_t>{2, 0, 1}));
  ir::value* updates = b.floats("u", {1, 3}, {7.0f, 8.0f, 9.0f});
  b.output_of(b.node("Scatter", {x, indices, updates}, ir::attribute_list(ir::attribute::make_int("axis", 0))));
  const ir::model up = test::converted(b.m, 18);
  CHECK(test::count(up.graph(), "ScatterElements") == 1);
  CHECK(test::max_difference(b.m, up) == 0.0);
  const ir::model down = test::converted(up, 10);
  CHECK(test::count(down.graph(), "Scatter") == 1);
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("ScatterElements reductions are refused below the opsets that added them", "[ir][convert-opset][scatter]") {
  test::opset_model b(18);
  ir::value* x = b.input("x", {3});
  ir::value* i = b.ints("i", {1});
  ir::value* u = b.floats("u", {1}, {2.0f});
  b.output_of(b.node("ScatterElements", {x, i, u}, ir::attribute_list(ir::attribute::make_string("reduction", "max"))));
  CHECK_THAT(test::conversion_error(b.m, 17).value_or(""), Catch::Contains("reduction 'max'"));
  test::first(b.m.graph(), "ScatterElements")->set_attribute(ir::attribute::make_string("reduction", "add"));
  CHECK_FALSE(test::conversion_error(b.m, 16));
  CHECK_THAT(test::conversion_error(b.m, 15).value_or(""), Catch::Contains("'reduction'"));
}
