#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Pow with an integer exponent casts it to the base's type below opset 12", "[ir][convert-opset][pow]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {2, 3});
  ir::value* e = b.m.graph().add_initializer("e", ir::tensor::from_values<std::int64_t>("e", {}, std::vector<std::int64_t>{3}));
  b.output_of(b.node("Pow", {x, e}));
  const ir::model down = test::converted(b.m, 11);
  const ir::node* cast = test::first(down.graph(), "Cast");
  REQUIRE(cast);
  CHECK(cast->attr_int("to", 0) == static_cast<std::int64_t>(ir::data_type::float32));
  CHECK(test::first(down.graph(), "Pow")->input(1) == cast->output(0));
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("Pow of an integer base is refused below opset 12", "[ir][convert-opset][pow]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {2}, ir::data_type::int64);
  b.output_of(b.node("Pow", {x, x}));
  CHECK_THAT(test::conversion_error(b.m, 11).value_or(""), Catch::Contains("int64 has no form before opset 12"));
}
