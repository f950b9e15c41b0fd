#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

namespace {

ir::model group_norm(std::int64_t opset, std::vector<std::int64_t> dims, const std::vector<float>& scale) {
  test::opset_model b(opset);
  ir::value* x = b.input("x", std::move(dims));
  const auto n = static_cast<std::int64_t>(scale.size());
  b.output_of(b.node("GroupNormalization", {x, b.floats("scale", {n}, scale), b.floats("bias", {n}, std::vector<float>(scale.size(), 0.0f))},
                     ir::attribute_list(ir::attribute::make_int("num_groups", 2))));
  return std::move(b.m);
}

}  // namespace

// The executor has no GroupNormalization kernel: these check the structure only.
TEST_CASE("GroupNormalization's per-group scale becomes per channel at opset 21 and back", "[ir][convert-opset][group-norm]") {
  const ir::model up = test::converted(group_norm(18, {1, 6, 2}, {0.5f, 2.0f}), 21);
  const ir::node* n = test::first(up.graph(), "GroupNormalization");
  CHECK(n->input(1)->initializer()->values<float>() == std::vector<float>{0.5f, 0.5f, 0.5f, 2.0f, 2.0f, 2.0f});
  const ir::model down = test::converted(up, 18);
  CHECK(test::first(down.graph(), "GroupNormalization")->input(1)->initializer()->values<float>() == std::vector<float>{0.5f, 2.0f});
}

TEST_CASE("GroupNormalization with scales that differ within a group is refused below opset 21", "[ir][convert-opset][group-norm]") {
  const ir::model before = group_norm(21, {1, 4, 2}, {1.0f, 2.0f, 3.0f, 3.0f});
  CHECK_THAT(test::conversion_error(before, 20).value_or(""), Catch::Contains("different scales"));
}

TEST_CASE("GroupNormalization of an unknown channel count is refused at opset 21", "[ir][convert-opset][group-norm]") {
  const ir::model before = group_norm(18, {}, {1.0f, 2.0f});
  ir::model copy = before.clone();
  copy.graph().find_value("x")->set_type(std::nullopt);
  CHECK_THAT(test::conversion_error(copy, 21).value_or(""), Catch::Contains("channel count"));
}
