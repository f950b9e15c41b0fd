#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

// The executor has no TopK kernel: the structure only.
TEST_CASE("TopK's k becomes input 1 at opset 10 and an attribute again below", "[ir][convert-opset][topk]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {2, 5});
  ir::node* t = b.node("TopK", {x}, ir::attribute_list(ir::attribute::make_int("k", 3)), 2);
  b.m.graph().add_output(t->output(0));
  b.m.graph().add_output(t->output(1));
  const ir::model up = test::converted(b.m, 11);
  const ir::node* u = test::first(up.graph(), "TopK");
  CHECK(test::ints_at(u, 1) == std::vector<std::int64_t>{3});
  CHECK_FALSE(u->find_attribute("k"));
  const ir::model down = test::converted(up, 9);
  CHECK(test::first(down.graph(), "TopK")->attr_int("k", 0) == 3);
  CHECK(test::output_names_equal(b.m, down));
}

TEST_CASE("TopK returning the smallest values is refused below opset 11", "[ir][convert-opset][topk]") {
  test::opset_model b(11);
  ir::value* x = b.input("x", {5});
  ir::node* t = b.node("TopK", {x, b.ints("k", {2})}, ir::attribute_list(ir::attribute::make_int("largest", 0)), 2);
  b.m.graph().add_output(t->output(0));
  CHECK_THAT(test::conversion_error(b.m, 10).value_or(""), Catch::Contains("'largest'"));
}
