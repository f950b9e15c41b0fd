// The pass interface: pass_context and the defaults every pass inherits.

#include "inferopt/pass/pass.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

TEST_CASE("pass_context reports the default-domain opset of its model", "[pass][pass-context]") {
  SECTION("the empty domain") {
    ir::model m = ir::make_model("m", 13);
    CHECK(pass_context(m).onnx_opset() == 13);
  }
  SECTION("the ai.onnx spelling") {
    ir::model m;
    m.opsets = {{"com.microsoft", 1}, {"ai.onnx", 11}};
    CHECK(pass_context(m).onnx_opset() == 11);
  }
  SECTION("0 when the default domain is not imported") {
    ir::model m;
    m.opsets = {{"com.microsoft", 1}};
    CHECK(pass_context(m).onnx_opset() == 0);
  }
}

TEST_CASE("pass_context adds up rewrites and named statistics", "[pass][pass-context]") {
  ir::model m = ir::make_model("m");
  pass_context ctx(m);
  CHECK(&ctx.model() == &m);
  CHECK(ctx.rewrites() == 0);
  CHECK(ctx.counters().empty());
  ctx.rewrote();
  ctx.rewrote(4);
  ctx.count("nodes-removed");
  ctx.count("nodes-removed", 2);
  ctx.count("declined", 0);
  CHECK(ctx.rewrites() == 5);
  CHECK(ctx.counters().at("nodes-removed") == 3);
  CHECK(ctx.counters().at("declined") == 0);
}

TEST_CASE("a pass without options refuses every option, naming itself and the key", "[pass][pass-context]") {
  auto p = test::cleanup_registry().create("dce");
  CHECK(p->options().empty());
  auto e = test::error_from([&] { p->set_option("ratio", "0.5"); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::invalid_argument);
  CHECK(std::string(e->what()) == "pass 'dce' has no option 'ratio'");
}

TEST_CASE("built-in passes have kebab-case names and descriptions", "[pass][pass-context]") {
  const pass_registry r = test::cleanup_registry();
  for (const pass_registry::entry* e : r.passes()) {
    std::unique_ptr<pass> p = e->make();
    const std::string name(p->name());
    CAPTURE(name);
    CHECK_FALSE(name.empty());
    // Digits are allowed after the first letter: `to-fp16` names a number format.
    CHECK((name.front() >= 'a' && name.front() <= 'z'));
    CHECK(std::all_of(name.begin(), name.end(),
                      [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }));
    CHECK_FALSE(p->description().empty());
  }
}
