#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

/// y = BatchNormalization(x, scale, bias, mean, var) with `outputs` outputs, only y read.
ir::model batch_norm(std::int64_t opset, std::size_t outputs, std::vector<ir::attribute> attributes = {}) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {1, 2, 3, 3});
  std::vector<ir::value*> params;
  for (const char* p : {"scale", "bias", "mean", "var"}) params.push_back(b.floats(p, {2}, {0.5f, 1.5f}));
  ir::node* n = b.node("BatchNormalization", {x, params[0], params[1], params[2], params[3]}, std::move(attributes), outputs);
  b.output_of(b.node("Relu", {n->output(0)}));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("BatchNormalization loses spatial at 9 and its unread statistics outputs at 14", "[ir][convert-opset][batch-norm]") {
  const ir::model before = batch_norm(7, 5, ir::attribute_list(ir::attribute::make_int("spatial", 1)));
  const ir::model up = test::converted(before, 15);
  const ir::node* n = test::first(up.graph(), "BatchNormalization");
  CHECK(n->outputs().size() == 1);
  CHECK_FALSE(n->find_attribute("spatial"));
  // The executor runs inference outputs only: the numbers are checked on Y alone.
  const ir::model inference = batch_norm(7, 1, ir::attribute_list(ir::attribute::make_int("spatial", 1)));
  CHECK(test::max_difference(inference, up) == 0.0);
  CHECK(test::max_difference(inference, test::converted(up, 7)) == 0.0);
}

TEST_CASE("BatchNormalization with per-activation parameters is refused at opset 9", "[ir][convert-opset][batch-norm]") {
  const ir::model before = batch_norm(8, 1, ir::attribute_list(ir::attribute::make_int("spatial", 0)));
  CHECK_THAT(test::conversion_error(before, 9).value_or(""), Catch::Contains("spatial"));
}

TEST_CASE("BatchNormalization in training mode is refused below opset 14", "[ir][convert-opset][batch-norm]") {
  const ir::model before = batch_norm(15, 1, ir::attribute_list(ir::attribute::make_int("training_mode", 1)));
  CHECK_THAT(test::conversion_error(before, 13).value_or(""), Catch::Contains("training_mode"));
}
