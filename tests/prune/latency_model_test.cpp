// The latency table of latency-aware pruning: which nodes a group's units scale, what each
// unit saves, what a plan leaves; and the speedup search's refusals. Times are given, not
// measured, wherever a number is checked: the machine's speed must not decide a test.

#include "inferopt/prune/latency_model.hpp"

#include <catch2/catch.hpp>

#include "inferopt/prune/latency_target.hpp"
#include "prune_test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

/// Given times: the first MatMul 4 ms, the second 2, every other node 1; the run 12.
prune::node_timing given_timing(const ir::model& m) {
  prune::node_timing t;
  int matmuls = 0;
  for (const ir::node* n : m.graph().nodes()) t.node_ms[n->label()] = n->is("MatMul") ? (matmuls++ == 0 ? 4.0 : 2.0) : 1.0;
  t.run_ms = 12.0;
  return t;
}

/// A target timed on a seeded batch of `m`.
prune::latency_target timed_target(const ir::model& m, double speedup) {
  runtime::session s(m, {.threads = 1});
  prune::latency_target target;
  target.feeds = runtime::random_inputs(s, 5);
  target.speedup = speedup;
  return target;
}

std::size_t prunable_group(const prune::channel_analysis& a) {
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (a.groups[g].prunable()) return g;
  }
  FAIL("no prunable group");
  return 0;
}

}  // namespace

TEST_CASE("the latency table holds the nodes a prunable group reaches, each unit sharing their time", "[prune][latency]") {
  const ir::model m = test::two_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const prune::latency_model table(a, given_timing(m));
  // MatMul1 makes the channels, Add and Relu carry them, MatMul2 reads them; the last Add
  // only sees the pinned output channels.
  REQUIRE(table.nodes().size() == 4);
  double ms = 0.0;
  for (const prune::timed_node& n : table.nodes()) ms += n.ms;
  CHECK(ms == Approx(8.0));
  const std::size_t g = prunable_group(a);
  const auto costs = table.unit_costs();
  REQUIRE(costs[g].size() == 10);
  for (double c : costs[g]) CHECK(c == Approx(0.8));  // (4 + 1 + 1 + 2) / 10
}

TEST_CASE("a plan scales each node by the share of the group's positions it keeps", "[prune][latency]") {
  const ir::model m = test::two_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const prune::latency_model table(a, given_timing(m));
  const std::size_t g = prunable_group(a);
  SECTION("half the units go: the reached nodes take half their time") {
    const prune::pruning_plan plan{{{g, {0, 2, 4, 6, 8}}}};
    CHECK(table.predicted_run_ms(plan) == Approx(12.0 - 4.0));
    for (double ms : table.predicted_node_ms(plan)) CHECK(ms > 0.0);
  }
  SECTION("nothing goes: the run is as measured") { CHECK(table.predicted_run_ms({}) == Approx(12.0)); }
}

TEST_CASE("a node that reads one prunable group and makes another scales by both", "[prune][latency]") {
  // x -> MatMul [6, 10] -> Relu -> MatMul [10, 12] -> Relu -> MatMul [12, 3] -> y: the middle
  // MatMul reads the first group and makes the second.
  const ir::model m = test::build_model({16, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* h1 = b.relu(b.matmul(x, b.random_constant("w1", {6, 10}, 0.5f)));
    ir::value* h2 = b.relu(b.matmul(h1, b.random_constant("w2", {10, 12}, 0.5f)));
    return b.matmul(h2, b.random_constant("w3", {12, 3}, 0.5f));
  });
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  prune::node_timing t;
  for (const ir::node* n : m.graph().nodes()) t.node_ms[n->label()] = n->is("MatMul") ? 6.0 : 0.0;
  t.run_ms = 18.0;
  const prune::latency_model table(a, t);
  prune::pruning_plan plan;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (!a.groups[g].prunable()) continue;
    const std::size_t units = a.groups[g].units.size();
    plan.groups.push_back({g, {}});
    for (std::size_t u = 0; u < units / 2; ++u) plan.groups.back().removed_units.push_back(u);
  }
  REQUIRE(plan.groups.size() == 2);
  // The first and last MatMul lose half; the middle one keeps a quarter: 18 - 3 - 4.5 - 3.
  CHECK(table.predicted_run_ms(plan) == Approx(7.5));
}

TEST_CASE("time_nodes times every node of the run", "[prune][latency]") {
  const ir::model m = test::two_layer_model();
  runtime::session s(m, {.threads = 1});
  const prune::node_timing t = prune::time_nodes(m, runtime::random_inputs(s, 3), 1, 3);
  std::size_t nodes = 0;
  for (const ir::node* n : m.graph().nodes()) nodes += t.node_ms.count(n->label());
  CHECK(nodes == t.node_ms.size());
  CHECK(nodes == 5);
  for (const auto& [node, ms] : t.node_ms) CHECK(ms >= 0.0);
  CHECK(t.run_ms > 0.0);
  REQUIRE_THROWS_WITH(prune::time_nodes(m, runtime::random_inputs(s, 3), 1, 0), Contains("at least one run"));
}

TEST_CASE("the speedup search refuses a target the table cannot reach and one of at most 1", "[prune][latency]") {
  const ir::model m = test::two_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  prune::latency_target target = timed_target(m, 50.0);
  const std::vector<std::vector<double>> scores = prune::unit_importance(m, a, {});
  prune::latency_report report;
  // The hidden group may lose 90% at most, and the output layer's time stays.
  REQUIRE_THROWS_WITH(prune::plan_for_speedup(m, a, {}, scores, false, {}, target, report), Contains("out of reach"));
  target.speedup = 1.0;
  REQUIRE_THROWS_WITH(prune::plan_for_speedup(m, a, {}, scores, false, {}, target, report), Contains("above 1"));
  target.speedup = 1.2;
  target.feeds.clear();
  REQUIRE_THROWS_WITH(prune::plan_for_speedup(m, a, {}, scores, false, {}, target, report), Contains("a batch to time"));
}

TEST_CASE("the speedup search keeps the attempt measured closest to the target", "[prune][latency]") {
  const ir::model m = test::two_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  prune::latency_target target = timed_target(m, 1.2);
  target.rounds = 3;
  target.tolerance = 0.0;  // never close enough: every attempt runs
  prune::selection_options selection;
  selection.round_to = 1;
  selection.max_group_ratio = 0.9;
  prune::channel_analysis_options analysis;
  analysis.ignore_defaults = false;
  prune::latency_report report;
  const prune::pruning_plan plan =
      prune::plan_for_speedup(m, a, analysis, prune::unit_importance(m, a, {}), false, selection, target, report);
  REQUIRE(static_cast<int>(report.attempts.size()) == target.max_attempts);
  double closest = INFINITY;
  for (const prune::speedup_attempt& t : report.attempts) closest = std::min(closest, std::abs(t.measured / 1.2 - 1.0));
  CHECK(std::abs(report.measured_speedup / 1.2 - 1.0) == Approx(closest));
  CHECK(report.predicted_run_ms == Approx(report.run_ms / report.predicted_speedup));
  CHECK(report.predicted_node_ms.size() == report.nodes.size());
  CHECK(plan.removed_units() <= 9);
}

TEST_CASE("the speedup search corrects its goal by the table's measured bias", "[prune][latency]") {
  // A table 25% optimistic: what it predicts at goal g measures 0.8 g.
  std::vector<double> goals;
  const prune::speedup_search search = prune::search_speedup(1.5, 0.05, 4, [&](double goal) {
    goals.push_back(goal);
    return prune::speedup_attempt{0.0, goal, 0.8 * goal};
  });
  REQUIRE(goals.size() == 2);
  CHECK(goals[1] == Approx(1.5 * 1.5 / 1.2));
  CHECK(search.best == 1);
  CHECK(search.attempts[1].measured == Approx(1.5));
  SECTION("a miss every time keeps the closest attempt") {
    int calls = 0;
    const prune::speedup_search s = prune::search_speedup(2.0, 0.01, 3, [&](double goal) {
      return prune::speedup_attempt{0.0, goal, ++calls == 2 ? 1.9 : 1.5};
    });
    CHECK(s.attempts.size() == 3);
    CHECK(s.best == 1);
  }
  SECTION("a timing far off by noise moves the goal at most to half or twice the target's saving") {
    std::vector<double> tried;
    (void)prune::search_speedup(1.3, 0.01, 3, [&](double goal) {
      tried.push_back(goal);
      return prune::speedup_attempt{0.0, goal, tried.size() == 1 ? 3.0 : 0.5};
    });
    REQUIRE(tried.size() == 3);
    const double saving = 1.0 - 1.0 / 1.3;
    CHECK(1.0 - 1.0 / tried[1] == Approx(saving / 2));
    CHECK(1.0 - 1.0 / tried[2] == Approx(2 * saving));
  }
}
