#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Slice's attributes become inputs at opset 10 and come back going down", "[ir][convert-opset][slice]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {4, 6});
  b.output_of(b.node("Slice", {x}, ir::attribute_list(ir::attribute::make_ints("starts", {1, 0}), ir::attribute::make_ints("ends", {3, 5}),
                                         ir::attribute::make_ints("axes", {0, 1}))));
  const ir::model up = test::converted(b.m, 13);
  const ir::node* s = test::first(up.graph(), "Slice");
  REQUIRE(s->inputs().size() == 4);
  CHECK(test::ints_at(s, 1) == std::vector<std::int64_t>{1, 0});
  CHECK(test::ints_at(s, 2) == std::vector<std::int64_t>{3, 5});
  CHECK(test::ints_at(s, 3) == std::vector<std::int64_t>{0, 1});
  CHECK(s->attributes().empty());
  CHECK(test::max_difference(b.m, up) == 0.0);

  const ir::model down = test::converted(up, 9);
  const ir::node* d = test::first(down.graph(), "Slice");
  CHECK(d->inputs().size() == 1);
  CHECK(d->attr_ints("starts", {}) == std::vector<std::int64_t>{1, 0});
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("Slice with steps other than 1 is refused below opset 10", "[ir][convert-opset][slice]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {6});
  b.output_of(b.node("Slice", {x, b.ints("s", {0}), b.ints("e", {6}), b.ints("a", {0}), b.ints("st", {2})}));
  CHECK_THAT(test::conversion_error(b.m, 9).value_or(""), Catch::Contains("steps other than 1"));
}

TEST_CASE("negative Slice axes are counted from the front below opset 11", "[ir][convert-opset][slice]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {4, 6});
  b.output_of(b.node("Slice", {x, b.ints("s", {1}), b.ints("e", {4}), b.ints("a", {-1})}));
  const ir::model down = test::converted(b.m, 10);
  CHECK(test::ints_at(test::first(down.graph(), "Slice"), 3) == std::vector<std::int64_t>{1});
  CHECK(test::max_difference(b.m, down) == 0.0);
}
