#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Reshape's shape attribute becomes input 1 at opset 5", "[ir][convert-opset][reshape]") {
  test::opset_model b(4);
  ir::value* x = b.input("x", {2, 6});
  b.output_of(b.node("Reshape", {x}, ir::attribute_list(ir::attribute::make_ints("shape", {3, -1}))));
  const ir::model up = test::converted(b.m, 13);
  const ir::node* r = test::first(up.graph(), "Reshape");
  CHECK(test::ints_at(r, 1) == std::vector<std::int64_t>{3, -1});
  CHECK(r->attributes().empty());
}

TEST_CASE("Reshape's allowzero goes below opset 14 only where it changes nothing", "[ir][convert-opset][reshape]") {
  test::opset_model b(14);
  ir::value* x = b.input("x", {2, 6});
  ir::node* r = b.node("Reshape", {x, b.ints("shape", {3, 4})}, ir::attribute_list(ir::attribute::make_int("allowzero", 1)));
  b.output_of(r);
  const ir::model down = test::converted(b.m, 13);
  CHECK_FALSE(test::first(down.graph(), "Reshape")->find_attribute("allowzero"));
  CHECK(test::max_difference(b.m, down) == 0.0);
  b.m.graph().set_input(r, 1, b.ints("with_zero", {0, 12}));
  CHECK_THAT(test::conversion_error(b.m, 13).value_or(""), Catch::Contains("allowzero"));
}
