#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model split_model(std::int64_t opset, std::vector<ir::attribute> attributes, std::int64_t width = 6) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {2, width});
  ir::node* s = b.node("Split", {x}, std::move(attributes), 2);
  b.m.graph().add_output(s->output(0));
  b.m.graph().add_output(s->output(1));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("Split's sizes become input 1 at opset 13 and an attribute again below", "[ir][convert-opset][split]") {
  const ir::model before = split_model(11, ir::attribute_list(ir::attribute::make_int("axis", 1), ir::attribute::make_ints("split", {2, 4})));
  const ir::model up = test::converted(before, 18);
  const ir::node* s = test::first(up.graph(), "Split");
  CHECK(test::ints_at(s, 1) == std::vector<std::int64_t>{2, 4});
  CHECK_FALSE(s->find_attribute("num_outputs"));  // sizes given: 18 wants only them
  CHECK(test::max_difference(before, up) == 0.0);
  const ir::model down = test::converted(up, 11);
  CHECK(test::first(down.graph(), "Split")->attr_ints("split", {}) == std::vector<std::int64_t>{2, 4});
  CHECK(test::max_difference(before, down) == 0.0);
}

TEST_CASE("an even Split gets num_outputs at opset 18 and loses it going down", "[ir][convert-opset][split]") {
  const ir::model before = split_model(13, ir::attribute_list(ir::attribute::make_int("axis", 1)));
  const ir::model up = test::converted(before, 18);
  CHECK(test::first(up.graph(), "Split")->attr_int("num_outputs", 0) == 2);
  CHECK(test::max_difference(before, up) == 0.0);
  const ir::model down = test::converted(up, 13);
  CHECK_FALSE(test::first(down.graph(), "Split")->find_attribute("num_outputs"));
}

TEST_CASE("an uneven num_outputs Split becomes explicit sizes below opset 18", "[ir][convert-opset][split]") {
  const ir::model before = split_model(18, ir::attribute_list(ir::attribute::make_int("axis", 1), ir::attribute::make_int("num_outputs", 2)), 5);
  const ir::model down = test::converted(before, 17);
  CHECK(test::ints_at(test::first(down.graph(), "Split"), 1) == std::vector<std::int64_t>{3, 2});
  CHECK(test::max_difference(before, down) == 0.0);
}
