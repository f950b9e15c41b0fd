#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("Dropout's ratio becomes input 1 at opset 12 and an unread mask is dropped", "[ir][convert-opset][dropout]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {2, 3});
  ir::node* d = b.node("Dropout", {x}, ir::attribute_list(ir::attribute::make_float("ratio", 0.25f)), 2);
  b.output_of(b.node("Relu", {d->output(0)}));
  ir::opset_conversion_report r;
  const ir::model up = test::converted(b.m, 13, &r);
  const ir::node* u = test::first(up.graph(), "Dropout");
  CHECK(u->outputs().size() == 1);
  CHECK(u->input(1)->initializer()->values<float>() == std::vector<float>{0.25f});
  CHECK(r.changed_nodes.at("dropout-ratio-to-input") == 1);
  CHECK(r.changed_nodes.at("dropout-mask-type") == 1);
  CHECK(test::max_difference(b.m, up) == 0.0);

  const ir::model down = test::converted(up, 9);
  const ir::node* n = test::first(down.graph(), "Dropout");
  CHECK(n->inputs().size() == 1);
  CHECK(n->attr_float("ratio", 0.0f) == 0.25f);
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("a Dropout mask someone reads is refused across opset 10", "[ir][convert-opset][dropout]") {
  test::opset_model b(9);
  ir::value* x = b.input("x", {2});
  ir::node* d = b.node("Dropout", {x}, {}, 2);
  b.m.graph().add_output(d->output(0));
  b.m.graph().add_output(d->output(1));
  CHECK_THAT(test::conversion_error(b.m, 10).value_or(""), Catch::Contains("mask"));
}

TEST_CASE("Dropout in training mode is refused below opset 12", "[ir][convert-opset][dropout]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {2});
  ir::value* training = b.input("training", {}, ir::data_type::boolean);
  b.output_of(b.node("Dropout", {x, nullptr, training}));
  CHECK_THAT(test::conversion_error(b.m, 11).value_or(""), Catch::Contains("training_mode"));
}
