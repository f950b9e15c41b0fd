#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model cast(std::int64_t opset, ir::attribute to, std::vector<ir::attribute> extra = {}) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {4});
  extra.push_back(std::move(to));
  b.output_of(b.node("Cast", {x}, std::move(extra)));
  return std::move(b.m);
}

ir::attribute to(ir::data_type t) { return ir::attribute::make_int("to", static_cast<std::int64_t>(t)); }

}  // namespace

TEST_CASE("Cast's saturate goes below opset 19 and its round_mode below 24", "[ir][convert-opset][cast]") {
  const ir::model before = cast(24, to(ir::data_type::float16),
                                ir::attribute_list(ir::attribute::make_int("saturate", 1), ir::attribute::make_string("round_mode", "up")));
  const ir::model down = test::converted(before, 13);
  CHECK(test::first(down.graph(), "Cast")->attributes().size() == 1);
}

TEST_CASE("a Cast to a type an older opset lacks is refused", "[ir][convert-opset][cast]") {
  CHECK_THAT(test::conversion_error(cast(19, to(ir::data_type::float8e4m3fn)), 18).value_or(""),
             Catch::Contains("float8e4m3fn has no form before opset 19"));
  CHECK_THAT(test::conversion_error(cast(13, to(ir::data_type::bfloat16)), 12).value_or(""), Catch::Contains("bfloat16"));
  CHECK_FALSE(test::conversion_error(cast(13, to(ir::data_type::float16)), 7));
}

TEST_CASE("Cast's type name becomes a number at opset 6", "[ir][convert-opset][cast]") {
  const ir::model up = test::converted(cast(1, ir::attribute::make_string("to", "FLOAT16")), 7);
  CHECK(test::first(up.graph(), "Cast")->attr_int("to", 0) == static_cast<std::int64_t>(ir::data_type::float16));
}
