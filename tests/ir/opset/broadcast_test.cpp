#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("legacy broadcasting at an axis gets B trailing size-1 axes at opset 7", "[ir][convert-opset][broadcast]") {
  test::opset_model b(6);
  ir::value* a = b.input("a", {2, 3, 4, 5});
  ir::value* c = b.floats("c", {3}, {1.0f, 2.0f, 3.0f});
  ir::value* d = b.input("d", {3, 4});
  ir::value* s = b.node("Add", {a, c}, ir::attribute_list(ir::attribute::make_int("broadcast", 1), ir::attribute::make_int("axis", 1)))->output(0);
  // Shape inference has no rules for legacy broadcasting: the rank comes from the declared type.
  s->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{2, 3, 4, 5}});
  b.output_of(b.node("Mul", {s, d}, ir::attribute_list(ir::attribute::make_int("broadcast", 1), ir::attribute::make_int("axis", 1))));
  ir::opset_conversion_report r;
  const ir::model up = test::converted(b.m, 13, &r);
  const ir::node* add = test::first(up.graph(), "Add");
  CHECK(add->attributes().empty());
  CHECK(add->input(1)->initializer()->dims == std::vector<std::int64_t>{3, 1, 1});  // a constant: reshaped
  const ir::node* mul = test::first(up.graph(), "Mul");
  REQUIRE(mul->input(1)->producer());
  CHECK(mul->input(1)->producer()->op_type() == "Unsqueeze");  // a graph input: unsqueezed in 13's form
  CHECK(test::ints_at(mul->input(1)->producer(), 1) == std::vector<std::int64_t>{2});
  CHECK(r.changed_nodes.at("legacy-broadcast") == 2);
  CHECK(test::max_difference(b.m, up) == 0.0);
}

TEST_CASE("a per-channel PRelu slope gets trailing size-1 axes at opset 7", "[ir][convert-opset][broadcast]") {
  test::opset_model b(6);
  ir::value* x = b.input("x", {1, 3, 2, 2});
  b.output_of(b.node("PRelu", {x, b.floats("slope", {3}, {0.1f, 0.2f, 0.3f})}));
  const ir::model up = test::converted(b.m, 9);
  CHECK(test::first(up.graph(), "PRelu")->input(1)->initializer()->dims == std::vector<std::int64_t>{3, 1, 1});
  CHECK(test::max_difference(b.m, up) == 0.0);
}

TEST_CASE("Sum of differently shaped inputs is refused below opset 8", "[ir][convert-opset][broadcast]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {2, 3});
  ir::value* y = b.input("y", {3});
  b.output_of(b.node("Sum", {x, y}));
  CHECK_THAT(test::conversion_error(b.m, 7).value_or(""), Catch::Contains("broadcasting"));
  ir::model same = b.m.clone();
  same.graph().find_value("y")->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{2, 3}});
  CHECK_FALSE(test::conversion_error(same, 7));
}
