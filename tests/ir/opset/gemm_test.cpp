#include <catch2/catch.hpp>

#include "opset_test_util.hpp"

using namespace inferopt;

TEST_CASE("a Gemm without C gets a zero C below opset 11", "[ir][convert-opset][gemm]") {
  test::opset_model b(13);
  ir::value* x = b.input("x", {2, 3});
  b.output_of(b.node("Gemm", {x, b.floats("w", {3, 4}, std::vector<float>(12, 0.5f))}, ir::attribute_list(ir::attribute::make_float("beta", 2.0f))));
  const ir::model down = test::converted(b.m, 9);
  const ir::node* g = test::first(down.graph(), "Gemm");
  REQUIRE(g->input(2));
  CHECK(g->input(2)->initializer()->values<float>() == std::vector<float>{0.0f});
  CHECK(test::max_difference(b.m, down) == 0.0);
}

TEST_CASE("Gemm's broadcast attribute goes at opset 7", "[ir][convert-opset][gemm]") {
  test::opset_model b(6);
  ir::value* x = b.input("x", {2, 3});
  ir::value* w = b.floats("w", {3, 4}, std::vector<float>(12, 0.5f));
  b.output_of(b.node("Gemm", {x, w, b.floats("c", {4}, {1, 2, 3, 4})}, ir::attribute_list(ir::attribute::make_int("broadcast", 1))));
  const ir::model up = test::converted(b.m, 11);
  CHECK_FALSE(test::first(up.graph(), "Gemm")->find_attribute("broadcast"));
  CHECK(test::max_difference(b.m, up) == 0.0);
}
