#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Pad's pads and value become inputs at opset 11, of the data's type", "[ir][convert-opset][pad]") {
  test::opset_model b(10);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Pad", {x}, ir::attribute_list(ir::attribute::make_ints("pads", {0, 1, 1, 2}), ir::attribute::make_float("value", 1.5f))));
  const ir::model up = test::converted(b.m, 18);
  const ir::node* p = test::first(up.graph(), "Pad");
  REQUIRE(p->inputs().size() == 3);
  CHECK(test::ints_at(p, 1) == std::vector<std::int64_t>{0, 1, 1, 2});
  CHECK(p->input(2)->initializer()->values<float>() == std::vector<float>{1.5f});
  CHECK_FALSE(p->find_attribute("pads"));
  CHECK(test::max_difference(b.m, up) == 0.0);

  const ir::model down = test::converted(up, 10);
  const ir::node* d = test::first(down.graph(), "Pad");
  CHECK(d->inputs().size() == 1);
  CHECK(d->attr_float("value", 0.0f) == 1.5f);
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("a zero Pad value needs no input", "[ir][convert-opset][pad]") {
  test::opset_model b(10);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Pad", {x}, ir::attribute_list(ir::attribute::make_ints("pads", {1, 1, 1, 1}))));
  CHECK(test::first(test::converted(b.m, 11).graph(), "Pad")->inputs().size() == 2);
}

TEST_CASE("Pad's axes input is spread over every axis below opset 18", "[ir][convert-opset][pad]") {
  test::opset_model b(18);
  ir::value* x = b.input("x", {2, 3, 4});
  b.output_of(b.node("Pad", {x, b.ints("pads", {1, 2}), nullptr, b.ints("axes", {-1})}));
  const ir::model down = test::converted(b.m, 17);
  const ir::node* p = test::first(down.graph(), "Pad");
  CHECK(p->inputs().size() == 2);
  CHECK(test::ints_at(p, 1) == std::vector<std::int64_t>{0, 0, 1, 0, 0, 2});
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("Pad's wrap mode is refused below opset 19", "[ir][convert-opset][pad]") {
  test::opset_model b(19);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Pad", {x, b.ints("pads", {0, 1, 0, 1})}, ir::attribute_list(ir::attribute::make_string("mode", "wrap"))));
  CHECK_THAT(test::conversion_error(b.m, 18).value_or(""), Catch::Contains("mode 'wrap'"));
}
