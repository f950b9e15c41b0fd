#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model pool(const std::string& op, std::int64_t opset, std::vector<ir::attribute> extra, std::size_t outputs = 1) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {1, 2, 5, 5});
  extra.push_back(ir::attribute::make_ints("kernel_shape", {2, 2}));
  b.output_of(b.node(op, {x}, std::move(extra), outputs));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("MaxPool's unread Indices output is dropped below opset 8", "[ir][convert-opset][pool]") {
  const ir::model before = pool("MaxPool", 12, ir::attribute_list(ir::attribute::make_int("storage_order", 0)), 2);
  const ir::model down = test::converted(before, 7);
  const ir::node* n = test::first(down.graph(), "MaxPool");
  CHECK(n->outputs().size() == 1);
  CHECK_FALSE(n->find_attribute("storage_order"));
  CHECK(test::max_difference(before, down) == 0.0);
}

TEST_CASE("pooling attributes that older opsets lack are dropped at their defaults and refused otherwise", "[ir][convert-opset][pool]") {
  SECTION("ceil_mode 0 and unit dilations go") {
    const ir::model before = pool("MaxPool", 12, ir::attribute_list(ir::attribute::make_int("ceil_mode", 0), ir::attribute::make_ints("dilations", {1, 1})));
    const ir::model down = test::converted(before, 9);
    const ir::node* n = test::first(down.graph(), "MaxPool");
    CHECK(n->attributes().size() == 1);  // kernel_shape
  }
  SECTION("ceil_mode 1 is refused below 10") {
    const ir::model before = pool("AveragePool", 12, ir::attribute_list(ir::attribute::make_int("ceil_mode", 1)));
    CHECK_THAT(test::conversion_error(before, 9).value_or(""), Catch::Contains("'ceil_mode'"));
  }
  SECTION("AveragePool dilations are refused below 19") {
    const ir::model before = pool("AveragePool", 19, ir::attribute_list(ir::attribute::make_ints("dilations", {2, 2})));
    CHECK_THAT(test::conversion_error(before, 18).value_or(""), Catch::Contains("'dilations'"));
  }
}
