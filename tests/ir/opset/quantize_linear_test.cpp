#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("per-tensor QuantizeLinear and DequantizeLinear lose axis below opset 13", "[ir][convert-opset][quantize]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {2, 3});
  ir::value* scale = b.floats("s", {}, {0.1f});
  ir::value* zero = b.m.graph().add_initializer("z", ir::tensor::from_values<std::int8_t>("z", {}, std::vector<std::int8_t>{0}));
  ir::value* q = b.node("QuantizeLinear", {x, scale, zero}, ir::attribute_list(ir::attribute::make_int("axis", 1)))->output(0);
  b.output_of(b.node("DequantizeLinear", {q, scale, zero}, ir::attribute_list(ir::attribute::make_int("axis", 1))));
  const ir::model down = test::converted(b.m, 10);
  CHECK_FALSE(test::first(down.graph(), "QuantizeLinear")->find_attribute("axis"));
  CHECK_FALSE(test::first(down.graph(), "DequantizeLinear")->find_attribute("axis"));
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("a per-axis DequantizeLinear is refused below opset 13", "[ir][convert-opset][quantize]") {
  test::opset_model b(13);
  ir::value* w = b.m.graph().add_initializer("w", ir::tensor::from_values<std::int8_t>("w", {2, 2}, std::vector<std::int8_t>{1, 2, 3, 4}));
  ir::value* scale = b.floats("s", {2}, {0.1f, 0.2f});
  b.output_of(b.node("DequantizeLinear", {w, scale}, ir::attribute_list(ir::attribute::make_int("axis", 0))));
  CHECK_THAT(test::conversion_error(b.m, 12).value_or(""), Catch::Contains("per-axis scale"));
}
