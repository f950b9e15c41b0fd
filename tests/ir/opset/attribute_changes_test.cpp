#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("a new attribute at its neutral value is dropped going down, any other value refused", "[ir][convert-opset][attributes]") {
  test::opset_model b(12);
  ir::value* x = b.input("x", {3, 4});
  ir::node* n = b.node("ArgMax", {x}, ir::attribute_list(ir::attribute::make_int("select_last_index", 0)));
  b.output_of(n);
  CHECK_FALSE(test::first(test::converted(b.m, 11).graph(), "ArgMax")->find_attribute("select_last_index"));
  n->set_attribute(ir::attribute::make_int("select_last_index", 1));
  CHECK_THAT(test::conversion_error(b.m, 11).value_or(""),
             Catch::Contains("node 'ArgMax_0' (ArgMax): attribute 'select_last_index' has no form before opset 12"));
}

TEST_CASE("negative axes are counted from the front below opset 11", "[ir][convert-opset][attributes]") {
  test::opset_model b(11);
  ir::value* x = b.input("x", {2, 3});
  ir::value* c = b.node("Concat", {x, x}, ir::attribute_list(ir::attribute::make_int("axis", -1)))->output(0);
  b.output_of(b.node("Unsqueeze", {c}, ir::attribute_list(ir::attribute::make_ints("axes", {-1}))));
  const ir::model down = test::converted(b.m, 10);
  CHECK(test::first(down.graph(), "Concat")->attr_int("axis", 0) == 1);
  CHECK(test::first(down.graph(), "Unsqueeze")->attr_ints("axes", {}) == std::vector<std::int64_t>{2});  // of the output's rank 3
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("an attribute whose default changed is written out going up", "[ir][convert-opset][attributes]") {
  test::opset_model b(3);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Concat", {x, x}));
  CHECK(test::first(test::converted(b.m, 7).graph(), "Concat")->attr_int("axis", 0) == 1);
}
