// The built-in instrumentations: verify_each and print_after_change.

#include "inferopt/pass/instrumentation.hpp"

#include <sstream>

#include <catch2/catch.hpp>

#include "inferopt/ir/printer.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

const pass_registry& registry() {
  static const pass_registry r = test::test_registry();
  return r;
}

/// `x -> Relu -> Identity -> Neg -> Sigmoid -> y`: a chain that any reordering breaks.
ir::model chain_model() {
  ir::model m = ir::make_model("chain");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* id = test::add_op(g, "Identity", {relu->output(0)}, "id");
  ir::node* neg = test::add_op(g, "Neg", {id->output(0)}, "neg");
  ir::node* sig = test::add_op(g, "Sigmoid", {neg->output(0)}, "sig", {"y"});
  g.add_output(sig->output(0));
  return m;
}

/// Runs pipeline text with the given instrumentation (none when null).
run_report run(ir::model& m, std::string_view text, std::unique_ptr<pass_instrumentation> i = nullptr) {
  pipeline p = parse_pipeline(text, registry());
  pass_manager manager;
  if (i) manager.add_instrumentation(std::move(i));
  return manager.run(p, m);
}

}  // namespace

TEST_CASE("verify_each lets passes that keep the graph valid through", "[pass][verify-each]") {
  ir::model m = chain_model();
  run_report r = run(m, "eliminate-identity,dce,remove-unused", std::make_unique<verify_each>());
  CHECK(r.passes.size() == 3);
  CHECK(test::count_ops(m.graph(), "Identity") == 0);
  CHECK(ir::find_problems(m.graph()).empty());
}

TEST_CASE("verify_each catches a pass that breaks the graph, names it and rolls it back", "[pass][verify-each]") {
  ir::model m = chain_model();
  ir::model expected = chain_model();
  run(expected, "eliminate-identity");

  auto e = test::error_from(
      [&] { (void)run(m, "eliminate-identity,test-breaks-order,dce", std::make_unique<verify_each>()); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::verification);
  CHECK_THAT(e->what(), Catch::StartsWith("pass 'test-breaks-order': left a broken graph: ") &&
                            Catch::Contains("topological order"));
  // Rolled back to the graph eliminate-identity left; the later dce never ran.
  CHECK(test::bytes_of(m) == test::bytes_of(expected));
  CHECK(ir::find_problems(m.graph()).empty());
}

TEST_CASE("without verify_each a broken graph goes unnoticed by the manager", "[pass][verify-each]") {
  // The contrast that shows verify_each, not the manager, catches structural damage.
  ir::model m = chain_model();
  run_report r = run(m, "test-breaks-order");
  CHECK(r.passes[0].changed);
  CHECK_FALSE(ir::find_problems(m.graph()).empty());
}

TEST_CASE("print_after_change prints only after passes that changed the graph", "[pass][print-after-change]") {
  ir::model m = chain_model();
  std::ostringstream out;
  run(m, "dce,eliminate-identity,remove-unused", std::make_unique<print_after_change>(out));
  const std::string text = out.str();
  const std::string header = "// ----- after eliminate-identity (1 rewrites) -----\n";
  CHECK(text.rfind(header, 0) == 0);
  CHECK(text == header + ir::to_text(m.graph()));  // the graph as it was after the change
  CHECK(text.find("after dce") == std::string::npos);
  CHECK(text.find("after remove-unused") == std::string::npos);
}

TEST_CASE("print_after_change prints once per changing run inside a fixpoint", "[pass][print-after-change]") {
  ir::model m = chain_model();
  std::ostringstream out;
  run(m, "fixpoint(eliminate-identity,dce)", std::make_unique<print_after_change>(out));
  const std::string text = out.str();
  CHECK(text.find("after eliminate-identity") != std::string::npos);
  CHECK(text.find("after eliminate-identity", text.find("after eliminate-identity") + 1) == std::string::npos);
  CHECK(text.find("after dce") == std::string::npos);
}

TEST_CASE("print_after_change prints nothing when no pass changes anything", "[pass][print-after-change]") {
  ir::model m = chain_model();
  std::ostringstream out;
  run(m, "dce,remove-unused", std::make_unique<print_after_change>(out));
  CHECK(out.str().empty());
}

TEST_CASE("an instrumentation that overrides nothing changes nothing", "[pass][instrumentation]") {
  class silent final : public pass_instrumentation {};
  ir::model m = chain_model();
  ir::model expected = chain_model();
  run(expected, "eliminate-identity");
  run(m, "eliminate-identity", std::make_unique<silent>());
  CHECK(test::bytes_of(m) == test::bytes_of(expected));
}
