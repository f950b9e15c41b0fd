#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model upsample(std::int64_t opset, const std::string& mode, std::vector<float> scales) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", {1, 2, 3, 4});
  b.output_of(b.node("Upsample", {x}, ir::attribute_list(ir::attribute::make_string("mode", mode), ir::attribute::make_floats("scales", scales))));
  return std::move(b.m);
}

}  // namespace

TEST_CASE("Upsample becomes a Resize that rounds and maps coordinates as Upsample did", "[ir][convert-opset][resize]") {
  const std::string mode = GENERATE("nearest", "linear");
  CAPTURE(mode);
  const ir::model before = upsample(8, mode, {1.0f, 1.0f, 2.0f, 3.0f});
  ir::opset_conversion_report r;
  const ir::model up = test::converted(before, 19, &r);
  const ir::node* n = test::first(up.graph(), "Resize");
  REQUIRE(n);
  CHECK(test::count(up.graph(), "Upsample") == 0);
  CHECK(n->inputs().size() == 3);
  CHECK(n->input(1)->initializer()->dims == std::vector<std::int64_t>{0});  // roi: read by tf_crop_and_resize only
  CHECK(n->attr_string("coordinate_transformation_mode", "") == "asymmetric");
  CHECK(n->attr_string("nearest_mode", "") == (mode == "nearest" ? "floor" : ""));
  CHECK(r.changed_nodes.at("upsample-to-resize") == 1);
  CHECK(test::max_difference(before, up) == 0.0);

  const ir::model down = test::converted(up, 8);
  const ir::node* u = test::first(down.graph(), "Upsample");
  REQUIRE(u);
  CHECK(u->inputs().size() == 1);
  CHECK(u->attr_string("mode", "") == mode);
  CHECK(test::max_difference(before, down) == 0.0);
}

TEST_CASE("nearest Upsample that both up- and downsamples is refused at Resize-11", "[ir][convert-opset][resize]") {
  const ir::model before = upsample(8, "nearest", {1.0f, 1.0f, 2.0f, 0.5f});
  CHECK_THAT(test::conversion_error(before, 11).value_or(""), Catch::Contains("round differently"));
  CHECK_FALSE(test::conversion_error(before, 10));  // Resize-10 still rounds per axis
}

TEST_CASE("a Resize only opset 11 can express is refused going down", "[ir][convert-opset][resize]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {1, 1, 2, 2});
  b.output_of(b.node("Resize", {x, nullptr, b.floats("scales", {4}, {1, 1, 2, 2})}, ir::attribute_list(ir::attribute::make_string("mode", "nearest"))));
  // The default half_pixel coordinates of 11 have no Resize-10 form.
  CHECK_THAT(test::conversion_error(b.m, 10).value_or(""), Catch::Contains("coordinate_transformation_mode"));
  const ir::model at11 = test::converted(b.m, 11);
  CHECK(test::first(at11.graph(), "Resize")->inputs().size() == 3);  // roi back as an empty tensor
  CHECK(test::max_difference(b.m, at11) == 0.0);
}

TEST_CASE("Resize's antialias and half_pixel_symmetric are refused below their opsets", "[ir][convert-opset][resize]") {
  test::opset_model b(19);
  ir::value* x = b.input("x", {1, 1, 4, 4});
  ir::value* scales = b.floats("scales", {4}, {1, 1, 0.5f, 0.5f});
  b.output_of(b.node("Resize", {x, nullptr, scales},
                     ir::attribute_list(ir::attribute::make_string("mode", "linear"), ir::attribute::make_int("antialias", 1),
                           ir::attribute::make_string("coordinate_transformation_mode", "half_pixel_symmetric"))));
  CHECK_THAT(test::conversion_error(b.m, 18).value_or(""), Catch::Contains("half_pixel_symmetric"));
  test::first(b.m.graph(), "Resize")->remove_attribute("coordinate_transformation_mode");
  CHECK_THAT(test::conversion_error(b.m, 17).value_or(""), Catch::Contains("'antialias'"));
}
