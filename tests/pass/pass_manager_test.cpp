// The pass manager: run reports, fixpoint iteration, rollback of failed passes,
// instrumentation hooks and recursion into subgraphs.

#include "inferopt/pass/pass_manager.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

const pass_registry& registry() {
  static const pass_registry r = test::test_registry();
  return r;
}

/// `x -> Relu -> Identity -> Identity -> Neg -> y`, plus a dead `Sigmoid(x)`: 5 nodes.
ir::model debris_model() {
  ir::model m = ir::make_model("debris");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* id1 = test::add_op(g, "Identity", {relu->output(0)}, "id1");
  ir::node* id2 = test::add_op(g, "Identity", {id1->output(0)}, "id2");
  ir::node* neg = test::add_op(g, "Neg", {id2->output(0)}, "neg", {"y"});
  test::add_op(g, "Sigmoid", {x}, "dead");
  g.add_output(neg->output(0));
  return m;
}

/// `x -> Relu -> If(cond) -> y`, the If's branches holding two Identity nodes: 6 nodes.
ir::model if_model() {
  ir::model m = ir::make_model("main");
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* n = test::add_if_with_identities(g, cond, relu->output(0), "if");
  g.add_output(n->output(0));
  return m;
}

run_report run(ir::model& m, std::string_view text, pass_manager& manager) {
  pipeline p = parse_pipeline(text, registry());
  return manager.run(p, m);
}

run_report run(ir::model& m, std::string_view text) {
  pass_manager manager;
  return run(m, text, manager);
}

/// The error a pipeline run throws (the test fails when it succeeds).
inferopt::error run_error(ir::model& m, std::string_view text, pass_manager& manager) {
  auto e = test::error_from([&] { (void)run(m, text, manager); });
  REQUIRE(e.has_value());
  return *e;
}

/// Records every hook call as `tag:hook:pass`.
class hook_log final : public pass_instrumentation {
 public:
  hook_log(std::string tag, std::vector<std::string>& log) : tag_(std::move(tag)), log_(log) {}
  void before_pass(const pass& p, const ir::model&) override { log_.push_back(tag_ + ":before:" + std::string(p.name())); }
  void after_pass(const pass& p, const ir::model&, const pass_outcome& o) override {
    log_.push_back(tag_ + ":after:" + std::string(p.name()) + (o.changed ? ":changed" : ""));
  }
  void after_pass_failed(const pass& p, const ir::model&, const std::string& why) override {
    log_.push_back(tag_ + ":failed:" + std::string(p.name()) + ":" + why);
  }

 private:
  std::string tag_;
  std::vector<std::string>& log_;
};

/// Throws from after_pass after the named pass.
class veto final : public pass_instrumentation {
 public:
  explicit veto(std::string target) : target_(std::move(target)) {}
  void after_pass(const pass& p, const ir::model&, const pass_outcome&) override {
    if (p.name() == target_) throw error(errc::verification, "vetoed");
  }

 private:
  std::string target_;
};

}  // namespace

TEST_CASE("the report has one record per pipeline slot, in pipeline order", "[pass][pass-manager]") {
  ir::model m = debris_model();
  run_report r = run(m, "eliminate-identity,dce,fixpoint(eliminate-identity,dce)");
  REQUIRE(r.passes.size() == 4);
  CHECK(r.passes[0].name == "eliminate-identity");
  CHECK(r.passes[1].name == "dce");
  CHECK(r.passes[2].name == "eliminate-identity");
  CHECK(r.passes[3].name == "dce");
  CHECK(r.passes[0].group.empty());
  CHECK(r.passes[1].group.empty());
  CHECK(r.passes[2].group == "fixpoint(eliminate-identity,dce)");
  CHECK(r.passes[3].group == "fixpoint(eliminate-identity,dce)");
  CHECK(r.passes[0].runs == 1);
  CHECK(r.passes[0].rewrites == 2);
  CHECK(r.passes[0].counters.at("identities-removed") == 2);
  CHECK(r.passes[1].rewrites == 1);
  // Nothing is left for the fixpoint: it runs once and stops.
  REQUIRE(r.fixpoints.size() == 1);
  CHECK(r.fixpoints[0].text == "fixpoint(eliminate-identity,dce)");
  CHECK(r.fixpoints[0].iterations == 1);
  CHECK(r.fixpoints[0].converged);
  CHECK(r.passes[2].runs == 1);
  CHECK_FALSE(r.passes[2].changed);
}

TEST_CASE("each record counts the nodes before its first run and its own change", "[pass][pass-manager]") {
  ir::model m = debris_model();
  run_report r = run(m, "eliminate-identity,dce,remove-unused");
  CHECK(r.nodes_before == 5);
  CHECK(r.nodes_after == 2);
  CHECK(r.passes[0].nodes_before == 5);
  CHECK(r.passes[0].nodes_after == 3);
  CHECK(r.passes[1].nodes_before == 3);
  CHECK(r.passes[1].nodes_after == 2);
  CHECK(r.passes[2].nodes_before == 2);
  CHECK(r.passes[2].nodes_after == 2);
  CHECK_FALSE(r.passes[2].changed);
  CHECK(r.milliseconds >= 0.0);
  for (const pass_record& p : r.passes) CHECK(p.milliseconds >= 0.0);
}

TEST_CASE("passes in a fixpoint add every iteration's run to one record", "[pass][pass-manager]") {
  ir::model m = debris_model();
  run_report r = run(m, "fixpoint(test-changes{times=2},eliminate-identity,dce)");
  REQUIRE(r.passes.size() == 3);
  REQUIRE(r.fixpoints.size() == 1);
  // Iterations 1 and 2 report changes; iteration 3 changes nothing and stops the group.
  CHECK(r.fixpoints[0].iterations == 3);
  CHECK(r.fixpoints[0].converged);
  for (const pass_record& p : r.passes) {
    CAPTURE(p.name);
    CHECK(p.runs == 3);
  }
  CHECK(r.passes[0].rewrites == 2);
  CHECK(r.passes[0].counters.at("runs") == 3);
  CHECK(r.passes[1].rewrites == 2);
  CHECK(r.passes[1].nodes_before == 5);
  CHECK(r.passes[1].nodes_after == 3);
  CHECK(r.passes[2].nodes_before == 3);
  CHECK(r.passes[2].nodes_after == 2);
}

TEST_CASE("a fixpoint that stops on its own is converged", "[pass][pass-manager]") {
  // The first iteration removes everything; the group only knows it has converged once an
  // iteration changes nothing.
  ir::model m = debris_model();
  run_report r = run(m, "fixpoint(eliminate-identity,dce)");
  REQUIRE(r.fixpoints.size() == 1);
  CHECK(r.fixpoints[0].iterations == 2);
  CHECK(r.fixpoints[0].converged);
  CHECK(r.passes[0].runs == 2);
  CHECK(r.passes[0].changed);
}

TEST_CASE("a fixpoint stopped by max-iterations is not converged", "[pass][pass-manager]") {
  ir::model m = debris_model();
  SECTION("a pass that always reports a change") {
    run_report r = run(m, "fixpoint{max-iterations=3}(test-always-changes,dce)");
    REQUIRE(r.fixpoints.size() == 1);
    CHECK(r.fixpoints[0].iterations == 3);
    CHECK_FALSE(r.fixpoints[0].converged);
    CHECK(r.passes[0].runs == 3);
    CHECK(r.passes[1].runs == 3);
  }
  SECTION("a cap reached on the last changing iteration") {
    run_report r = run(m, "fixpoint{max-iterations=2}(test-changes{times=2})");
    CHECK(r.fixpoints[0].iterations == 2);
    CHECK_FALSE(r.fixpoints[0].converged);
  }
}

TEST_CASE("a nested fixpoint adds its runs to the same records across outer iterations", "[pass][pass-manager]") {
  ir::model m = debris_model();
  run_report r = run(m, "fixpoint{max-iterations=5}(test-changes{times=2},fixpoint(eliminate-identity,dce))");
  REQUIRE(r.passes.size() == 3);
  CHECK(r.passes[1].group == "fixpoint(eliminate-identity,dce)");
  REQUIRE_FALSE(r.fixpoints.empty());
  const fixpoint_record& outer = r.fixpoints.front();
  CHECK(outer.text == "fixpoint{max-iterations=5}(test-changes{times=2},fixpoint(eliminate-identity,dce))");
  REQUIRE(r.fixpoints.size() == 2);  // one record per group, not per run
  CHECK(r.fixpoints[1].iterations == 4);
  CHECK(outer.iterations == 3);
  CHECK(outer.converged);
  CHECK(r.passes[0].runs == 3);
  // Inner group: 2 iterations on the first outer pass (changes, then none), 1 on each later.
  CHECK(r.passes[1].runs == 4);
  CHECK(r.passes[2].runs == 4);
  for (const fixpoint_record& f : r.fixpoints) CHECK(f.converged);
}

TEST_CASE("a pass that throws leaves the model exactly as before that pass", "[pass][pass-manager]") {
  pass_manager manager;
  SECTION("the first pass") {
    ir::model m = debris_model();
    const std::string before = test::bytes_of(m);
    inferopt::error e = run_error(m, "test-throws", manager);
    CHECK(e.code() == errc::unsupported);  // the pass's own code survives
    CHECK(std::string(e.what()) == "pass 'test-throws': gave up half way");
    CHECK(test::bytes_of(m) == before);
    CHECK(ir::find_problems(m.graph()).empty());
  }
  SECTION("after passes that changed the model") {
    ir::model m = debris_model();
    ir::model expected = debris_model();
    run(expected, "eliminate-identity,dce");
    inferopt::error e = run_error(m, "eliminate-identity,dce,test-throws,remove-unused", manager);
    CHECK_THAT(e.what(), Catch::StartsWith("pass 'test-throws': "));
    CHECK(test::bytes_of(m) == test::bytes_of(expected));
  }
  SECTION("inside a fixpoint, with subgraphs") {
    ir::model m = if_model();
    const std::string before = test::bytes_of(m);
    inferopt::error e = run_error(m, "fixpoint(test-throws)", manager);
    CHECK_THAT(e.what(), Catch::Contains("test-throws"));
    CHECK(test::bytes_of(m) == before);
    CHECK(m.graph().node_count_recursive() == 6);
    CHECK(ir::find_problems(m.graph()).empty());
  }
}

TEST_CASE("a standard exception from a pass becomes an internal error naming the pass", "[pass][pass-manager]") {
  ir::model m = debris_model();
  const std::string before = test::bytes_of(m);
  pass_manager manager;
  inferopt::error e = run_error(m, "test-throws-std", manager);
  CHECK(e.code() == errc::internal);
  CHECK(std::string(e.what()) == "pass 'test-throws-std': index 7 out of range");
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("instrumentation hooks run around every pass in the order they were added", "[pass][pass-manager]") {
  std::vector<std::string> log;
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<hook_log>("a", log));
  manager.add_instrumentation(std::make_unique<hook_log>("b", log));
  ir::model m = debris_model();
  SECTION("passes that succeed") {
    run(m, "dce,remove-unused", manager);
    CHECK(log == std::vector<std::string>{"a:before:dce", "b:before:dce", "a:after:dce:changed", "b:after:dce:changed",
                                          "a:before:remove-unused", "b:before:remove-unused",
                                          "a:after:remove-unused", "b:after:remove-unused"});
  }
  SECTION("a pass that fails") {
    (void)run_error(m, "test-throws", manager);
    CHECK(log == std::vector<std::string>{"a:before:test-throws", "b:before:test-throws",
                                          "a:failed:test-throws:gave up half way",
                                          "b:failed:test-throws:gave up half way"});
  }
}

TEST_CASE("an instrumentation that throws from after_pass fails the pass and rolls it back", "[pass][pass-manager]") {
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<veto>("eliminate-identity"));
  ir::model m = debris_model();
  ir::model expected = debris_model();
  run(expected, "dce");
  inferopt::error e = run_error(m, "dce,eliminate-identity", manager);
  CHECK(e.code() == errc::verification);
  CHECK(std::string(e.what()) == "pass 'eliminate-identity': vetoed");
  CHECK(test::bytes_of(m) == test::bytes_of(expected));
  CHECK(test::count_ops(m.graph(), "Identity") == 2);
}

TEST_CASE("passes run on If branches before the graph holding them", "[pass][pass-manager]") {
  ir::model m = if_model();
  std::vector<std::string> seen;
  pipeline p;
  SECTION("a pass that runs on subgraphs") {
    p.steps.emplace_back().single = std::make_unique<test::graph_recorder>(&seen, true);
    pass_manager().run(p, m);
    CHECK(seen == std::vector<std::string>{"if_then", "if_else", "main"});
  }
  SECTION("a pass that opts out") {
    p.steps.emplace_back().single = std::make_unique<test::graph_recorder>(&seen, false);
    pass_manager().run(p, m);
    CHECK(seen == std::vector<std::string>{"main"});
  }
}

TEST_CASE("eliminate-identity removes Identity nodes inside If branches", "[pass][pass-manager]") {
  ir::model m = if_model();
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  run_report r = run(m, "eliminate-identity", manager);
  CHECK(r.nodes_before == 6);
  CHECK(r.nodes_after == 4);
  CHECK(r.passes[0].rewrites == 2);
  CHECK(test::count_ops_recursive(m.graph(), "Identity") == 0);
  ir::graph& g = m.graph();
  ir::node* n = g.node_list().back();
  REQUIRE(n->is("If"));
  ir::graph& then_g = *n->subgraphs()[0];
  ir::graph& else_g = *n->subgraphs()[1];
  // then: Neg reads the outer Relu output directly.
  CHECK(then_g.node_list().front()->input(0) == g.node_list().front()->output(0));
  // else: the branch output keeps its name, now produced by Neg.
  REQUIRE(test::output_names(else_g) == std::vector<std::string>{"if_else_out"});
  CHECK(else_g.outputs()[0]->producer()->is("Neg"));
  CHECK(ir::find_problems(g).empty());
}

TEST_CASE("each run starts a fresh report", "[pass][pass-manager]") {
  ir::model m = debris_model();
  pass_manager manager;
  run(m, "eliminate-identity,fixpoint(dce)", manager);
  run_report second = run(m, "remove-unused", manager);
  REQUIRE(second.passes.size() == 1);
  CHECK(second.passes[0].name == "remove-unused");
  CHECK(second.passes[0].runs == 1);
  CHECK(second.fixpoints.empty());
}

TEST_CASE("an empty pipeline leaves the model untouched", "[pass][pass-manager]") {
  ir::model m = debris_model();
  const std::string before = test::bytes_of(m);
  run_report r = run(m, "");
  CHECK(r.passes.empty());
  CHECK(r.fixpoints.empty());
  CHECK(r.nodes_before == 5);
  CHECK(r.nodes_after == 5);
  CHECK(test::bytes_of(m) == before);
}
