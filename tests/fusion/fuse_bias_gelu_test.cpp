// fuse-bias-gelu: a bias Add feeding a GELU becomes com.microsoft BiasGelu or FastGelu with
// its bias. Numbers: the executor before and after on the same random inputs (rtol 1e-4).

#include "inferopt/fusion/fuse_bias_gelu.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"

using namespace inferopt;

namespace {

constexpr std::int64_t rows = 3, width = 8;

/// x [3,8] -> Add(x, bias) (or Add(bias, x)) -> `gelu` -> y, at `opset`.
ir::model make(const std::string& domain, const std::string& gelu, std::int64_t opset, bool bias_first,
               std::vector<std::int64_t> bias_dims = {width}, const std::string& approximate = "none") {
  ir::model m = ir::make_model("bias_gelu", opset);
  ir::graph_builder gb(m.graph(), 5);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{rows}, ir::dim{width}});
  ir::value* b = gb.random_constant("bias", std::move(bias_dims), 0.5f);
  ir::value* h = bias_first ? gb.add(b, x) : gb.add(x, b);
  std::vector<ir::attribute> attrs;
  if (domain.empty()) attrs.push_back(ir::attribute::make_string("approximate", approximate));
  ir::node_spec spec{gelu, {h}, {"y"}, std::move(attrs), "gelu", domain};
  ir::node* n = m.graph().add_node(std::move(spec));
  gb.output(n->output(0));
  if (!domain.empty()) m.opsets.push_back({domain, 1});
  (void)ir::infer_shapes(m);
  return m;
}

}  // namespace

TEST_CASE("fuse-bias-gelu fuses a bias Add into the GELU of either domain", "[fusion][fuse-bias-gelu]") {
  const bool bias_first = GENERATE(false, true);
  SECTION("com.microsoft Gelu -> BiasGelu") {
    ir::model m = make("com.microsoft", "Gelu", 17, bias_first);
    test::pass_checker("fuse-bias-gelu").run_and_compare(m);
    CHECK(test::only_node(m).op_type() == "BiasGelu");
  }
  SECTION("com.microsoft FastGelu -> FastGelu with a bias") {
    ir::model m = make("com.microsoft", "FastGelu", 17, bias_first);
    test::pass_checker("fuse-bias-gelu").run_and_compare(m);
    CHECK(test::only_node(m).op_type() == "FastGelu");
    CHECK(test::only_node(m).inputs().size() == 2u);
  }
  SECTION("ai.onnx Gelu of opset 20, both approximations") {
    const std::string approximate = GENERATE(std::string("none"), std::string("tanh"));
    ir::model m = make("", "Gelu", 20, bias_first, {width}, approximate);
    test::pass_checker("fuse-bias-gelu").run_and_compare(m);
    CHECK(test::only_node(m).op_type() == (approximate == "tanh" ? "FastGelu" : "BiasGelu"));
    CHECK(test::only_node(m).domain() == "com.microsoft");
  }
}

TEST_CASE("fuse-bias-gelu leaves an Add that is not a bias on the last axis alone", "[fusion][fuse-bias-gelu]") {
  ir::model m = make("com.microsoft", "Gelu", 17, false, {rows, 1});
  test::pass_checker("fuse-bias-gelu").require_declined(m);
}
