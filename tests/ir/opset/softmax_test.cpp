#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model softmax(const std::string& op, std::int64_t opset, std::vector<std::int64_t> dims, std::optional<std::int64_t> axis) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", std::move(dims));
  std::vector<ir::attribute> a;
  if (axis) a.push_back(ir::attribute::make_int("axis", *axis));
  b.output_of(b.node(op, {x}, std::move(a)));
  return std::move(b.m);
}

}  // namespace

// Softmax over the same row values in another loop order: equal to float rounding.
constexpr double tolerance = 1e-6;

TEST_CASE("a coerced softmax over several axes becomes Flatten, softmax and Reshape at 13", "[ir][convert-opset][softmax]") {
  const std::string op = GENERATE("Softmax", "LogSoftmax", "Hardmax");
  CAPTURE(op);
  const ir::model before = softmax(op, 12, {2, 3, 4}, 1);
  const ir::model up = test::converted(before, 13);
  CHECK(test::count(up.graph(), "Flatten") == 1);
  CHECK(test::count(up.graph(), "Reshape") == 1);
  CHECK(test::first(up.graph(), op)->attr_int("axis", 0) == -1);
  CHECK(test::output_names_equal(before, up));
  CHECK(test::max_difference(before, up) <= tolerance);
  // Going back needs no more nodes: axis -1 means the same in both forms.
  const ir::model down = test::converted(up, 12);
  CHECK(test::count(down.graph(), "Transpose") == 0);
  CHECK(test::max_difference(before, down) <= tolerance);
}

TEST_CASE("a softmax on the last axis, or one followed by size-1 axes, changes only its attribute", "[ir][convert-opset][softmax]") {
  SECTION("last axis") {
    const ir::model up = test::converted(softmax("Softmax", 11, {2, 5}, 1), 13);
    CHECK(up.graph().node_count() == 1);
    CHECK(test::first(up.graph(), "Softmax")->attr_int("axis", 0) == -1);
  }
  SECTION("size-1 axes after it") {
    const ir::model before = softmax("Softmax", 9, {1, 10, 1, 1}, std::nullopt);
    const ir::model up = test::converted(before, 13);
    CHECK(up.graph().node_count() == 1);
    CHECK(test::first(up.graph(), "Softmax")->attr_int("axis", 0) == 1);
    CHECK(test::max_difference(before, up) == 0.0);
  }
}

TEST_CASE("a single-axis softmax on an inner axis goes down between two Transposes", "[ir][convert-opset][softmax]") {
  const ir::model before = softmax("Softmax", 13, {2, 3, 4}, 1);
  const ir::model down = test::converted(before, 12);
  CHECK(test::count(down.graph(), "Transpose") == 2);
  CHECK(test::first(down.graph(), "Softmax")->attr_int("axis", 0) == 2);
  CHECK(test::max_difference(before, down) <= tolerance);
}

TEST_CASE("a default-axis softmax keeps its meaning going down to the old default", "[ir][convert-opset][softmax]") {
  const ir::model before = softmax("Softmax", 13, {2, 3, 4}, std::nullopt);
  const ir::model down = test::converted(before, 10);
  CHECK(test::first(down.graph(), "Softmax")->attr_int("axis", 1) == 2);  // -1 at 12, counted from the front at 10
  CHECK(test::max_difference(before, down) <= tolerance);
}

TEST_CASE("a single-axis softmax on an input of unknown rank is refused going down", "[ir][convert-opset][softmax]") {
  test::opset_model b(13);
  ir::value* x = b.m.graph().add_input("x", std::nullopt);
  b.output_of(b.node("Softmax", {x}, ir::attribute_list(ir::attribute::make_int("axis", 0))));
  CHECK_THAT(test::conversion_error(b.m, 12).value_or(""), Catch::Contains("rank of 'x'"));
}
