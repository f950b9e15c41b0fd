// The greedy pattern driver: roots, benefit order, chains through the re-queued root, declines
// counted once, declared statistics, the caps, sweeps, subgraphs, and pattern_pass.

#include "inferopt/pass/pattern_driver.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/rewriting.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

/// Renames its root to `to`.
class rename_pattern final : public pattern<ir::node*> {
 public:
  rename_pattern(std::string from, std::string to, int benefit = 1)
      : pattern("rename-" + from + "-to-" + to, pattern_root{{std::move(from)}}, benefit), to_(std::move(to)) {}
  match_result<ir::node*> match(const ir::graph&, ir::node& n, const pass_context&) const override { return &n; }
  std::int64_t rewrite(ir::graph&, ir::node* const& n, pass_context&) const override {
    n->set_op_type(to_);
    return 1;
  }

 private:
  std::string to_;
};

/// Relu(x) -> Identity -> y: the Identity goes, one per rewrite; declines when the Identity's
/// output is a graph output.
class swallow_identity_pattern final : public pattern<ir::node*> {
 public:
  swallow_identity_pattern() : pattern("swallow-identity", pattern_root{{"Relu"}}, 1, {"identities-swallowed"}) {}
  match_result<ir::node*> match(const ir::graph&, ir::node& relu, const pass_context&) const override {
    ir::node* next = ir::sole_user(relu.output(0));
    if (!next || !next->is("Identity")) return {};
    if (next->output(0)->is_graph_output()) return match_result<ir::node*>::declined("declined-name");
    return next;
  }
  std::int64_t rewrite(ir::graph& g, ir::node* const& identity, pass_context& ctx) const override {
    ir::bypass(g, identity);
    ctx.count("identities-swallowed");
    return 1;
  }
};

/// Declines every root it sees.
class always_declines_pattern final : public pattern<int> {
 public:
  explicit always_declines_pattern(int benefit = 2) : pattern("always-declines", pattern_root{{"Relu"}}, benefit) {}
  match_result<int> match(const ir::graph&, ir::node&, const pass_context&) const override {
    return match_result<int>::declined("declined-always");
  }
  std::int64_t rewrite(ir::graph&, const int&, pass_context&) const override { return 1; }
};

/// Renames a Relu whose only reader is a Sigmoid: the reader's op type decides.
class relu_before_sigmoid_pattern final : public pattern<ir::node*> {
 public:
  relu_before_sigmoid_pattern() : pattern("relu-before-sigmoid", pattern_root{{"Relu"}}) {}
  match_result<ir::node*> match(const ir::graph&, ir::node& relu, const pass_context&) const override {
    ir::node* next = ir::sole_user(relu.output(0));
    if (!next || !next->is("Sigmoid")) return {};
    return &relu;
  }
  std::int64_t rewrite(ir::graph&, ir::node* const& relu, pass_context&) const override {
    relu->set_op_type("Tanh");
    return 1;
  }
};

/// x -> Relu -> Identity x `identities` -> Neg -> y
ir::model relu_chain(int identities) {
  ir::model m = ir::make_model("chain", 17);
  ir::graph& g = m.graph();
  ir::value* v = g.add_input("x", test::float_type({4}));
  v = test::add_op(g, "Relu", {v}, "relu")->output(0);
  for (int k = 0; k < identities; ++k) v = test::add_op(g, "Identity", {v}, "id" + std::to_string(k))->output(0);
  g.add_output(test::add_op(g, "Neg", {v}, "neg", {"y"})->output(0));
  return m;
}

driver_result run_patterns(ir::model& m, pass_context& ctx, std::vector<const rewrite_pattern*> patterns,
                           greedy_rewrite_config config = {}) {
  return apply_patterns_greedily(m.graph(), ctx, patterns, config);
}

}  // namespace

TEST_CASE("pattern_root accepts its op types in its domain and opset range", "[pass][pattern-driver]") {
  ir::model m = ir::make_model("g", 17);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::node* sum = test::add_op(g, "Sum", {x, x}, "sum");
  ir::node* onnx_sum = test::add_op(g, "Sum", {x, x}, "onnx_sum", {}, {}, "ai.onnx");
  ir::node* ms = test::add_op(g, "Sum", {x, x}, "ms", {}, {}, "com.microsoft");
  const pattern_root root{{"Sum", "Add"}, "", 8, 20};
  CHECK(root.accepts(*sum, 17));
  CHECK(root.accepts(*onnx_sum, 17));  // "ai.onnx" is the default domain
  CHECK_FALSE(root.accepts(*ms, 17));
  CHECK_FALSE(root.accepts(*sum, 7));
  CHECK_FALSE(root.accepts(*sum, 21));
  CHECK_FALSE(pattern_root{{"Add"}}.accepts(*sum, 17));
}

TEST_CASE("the pattern with the higher benefit is tried first, ties in the order given", "[pass][pattern-driver]") {
  ir::model m = relu_chain(0);
  pass_context ctx(m);
  const rename_pattern low("Neg", "Sigmoid", 1);
  const rename_pattern high("Neg", "Tanh", 2);
  SECTION("higher benefit wins") {
    const driver_result r = run_patterns(m, ctx, {&low, &high});
    CHECK(test::count_ops(m.graph(), "Tanh") == 1);
    CHECK(r.patterns.at(high.name()).rewrites == 1);
    CHECK(r.patterns.at(low.name()).rewrites == 0);
  }
  SECTION("equal benefits keep the given order") {
    const rename_pattern also_low("Neg", "Abs", 1);
    (void)run_patterns(m, ctx, {&also_low, &low});
    CHECK(test::count_ops(m.graph(), "Abs") == 1);
  }
}

TEST_CASE("a rewritten root is tried again at once, so a chain folds in one sweep", "[pass][pattern-driver]") {
  ir::model m = relu_chain(3);
  pass_context ctx(m);
  const swallow_identity_pattern swallow;
  const driver_result r = run_patterns(m, ctx, {&swallow});
  CHECK(test::count_ops(m.graph(), "Identity") == 0);
  CHECK(r.changed);
  CHECK(r.iterations == 1);
  CHECK_FALSE(r.converged);  // one sweep allowed, and it rewrote: another might find more
  CHECK(r.patterns.at("swallow-identity").rewrites == 3);
  CHECK(ctx.rewrites() == 3);
  CHECK(ctx.counters().at("identities-swallowed") == 3);
  CHECK(ir::find_problems(m.graph()).empty());
}

TEST_CASE("a decline is counted once per pattern, root and reason, however often the root is tried",
          "[pass][pattern-driver]") {
  ir::model m = relu_chain(3);
  pass_context ctx(m);
  const always_declines_pattern declines;  // tried before swallow-identity, on each of 4 visits
  const swallow_identity_pattern swallow;
  const driver_result r = run_patterns(m, ctx, {&swallow, &declines});
  CHECK(r.patterns.at("swallow-identity").rewrites == 3);
  CHECK(ctx.counters().at("declined-always") == 1);
  CHECK(r.patterns.at("always-declines").declined.at("declined-always") == 1);
}

TEST_CASE("a declined pattern leaves the graph byte for byte as it was", "[pass][pattern-driver]") {
  ir::model m = relu_chain(1);
  ir::graph& g = m.graph();
  for (ir::node* n : g.nodes()) {
    if (n->is("Identity")) g.add_output(n->output(0));
  }
  const std::string before = test::bytes_of(m);
  pass_context ctx(m);
  const swallow_identity_pattern swallow;
  const driver_result r = run_patterns(m, ctx, {&swallow});
  CHECK_FALSE(r.changed);
  CHECK(r.converged);
  CHECK(ctx.counters().at("declined-name") == 1);
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("declared statistics are reported at zero when nothing matched", "[pass][pattern-driver]") {
  ir::model m = relu_chain(0);
  pass_context ctx(m);
  const swallow_identity_pattern swallow;
  const driver_result r = run_patterns(m, ctx, {&swallow});
  CHECK_FALSE(r.changed);
  REQUIRE(ctx.counters().count("identities-swallowed") == 1);
  CHECK(ctx.counters().at("identities-swallowed") == 0);
  CHECK(ctx.rewrites() == 0);
}

TEST_CASE("the rewrite cap stops a pattern that keeps matching its own result", "[pass][pattern-driver]") {
  ir::model m = relu_chain(0);
  pass_context ctx(m);
  const rename_pattern forever("Relu", "Relu");
  greedy_rewrite_config config;
  config.max_rewrites = 10;
  const driver_result r = run_patterns(m, ctx, {&forever}, config);
  CHECK(r.patterns.at(forever.name()).rewrites == 10);
  CHECK_FALSE(r.converged);
  CHECK(ctx.rewrites() == 10);
}

TEST_CASE("a rewrite that enables a match upstream is found by the next sweep", "[pass][pattern-driver]") {
  const relu_before_sigmoid_pattern upstream;
  const rename_pattern identity_to_sigmoid("Identity", "Sigmoid");
  const std::vector<const rewrite_pattern*> both{&upstream, &identity_to_sigmoid};
  SECTION("one sweep: the Relu was tried before its reader changed") {
    ir::model m = relu_chain(1);
    pass_context ctx(m);
    const driver_result r = run_patterns(m, ctx, both);
    CHECK(test::count_ops(m.graph(), "Tanh") == 0);
    CHECK(r.iterations == 1);
    CHECK_FALSE(r.converged);
  }
  SECTION("three sweeps: the second finds it, the third finds nothing") {
    ir::model m = relu_chain(1);
    pass_context ctx(m);
    greedy_rewrite_config config;
    config.max_iterations = 3;
    const driver_result r = run_patterns(m, ctx, both, config);
    CHECK(test::count_ops(m.graph(), "Tanh") == 1);
    CHECK(r.iterations == 3);
    CHECK(r.converged);
  }
}

TEST_CASE("the driver rewrites inside subgraphs", "[pass][pattern-driver]") {
  ir::model m = ir::make_model("g", 17);
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::value* cond = g.add_initializer("cond", test::bool_scalar(true));
  ir::node* n = test::add_if_with_identities(g, cond, x, "if");
  g.add_output(n->output(0));
  pass_context ctx(m);
  const rename_pattern neg_to_abs("Neg", "Abs");
  const driver_result r = run_patterns(m, ctx, {&neg_to_abs});
  CHECK(test::count_ops_recursive(g, "Abs") == 2);
  CHECK(r.patterns.at(neg_to_abs.name()).rewrites == 2);
}

namespace {

class swallow_pass final : public pattern_pass {
 public:
  swallow_pass() : pattern_pass(make_patterns<swallow_identity_pattern>()) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "test-swallow"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "swallows Identities after Relu"; }
};

}  // namespace

TEST_CASE("a pattern_pass runs its patterns under the manager, which leaves subgraphs to the driver",
          "[pass][pattern-driver]") {
  ir::model m = relu_chain(2);
  swallow_pass p;
  CHECK_FALSE(p.runs_on_subgraphs());
  REQUIRE(p.patterns().size() == 1);
  pass_registry registry;
  registry.add<swallow_pass>();
  const run_report r = test::run_pipeline(m, "test-swallow", registry);
  REQUIRE(r.passes.size() == 1);
  CHECK(r.passes[0].rewrites == 2);
  CHECK(r.passes[0].counters.at("identities-swallowed") == 2);
  CHECK(test::count_ops(m.graph(), "Identity") == 0);
}
