// End-to-end sensitivity of channel groups and the allocation of a budget by it: the
// allocation on given curves (exact), the measurement against what the executor computes.

#include "inferopt/prune/group_sensitivity.hpp"

#include <catch2/catch.hpp>

#include "prune_test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

/// x[16, 6] -> MatMul [6, 16] -> Relu -> MatMul [16, 16] -> Relu -> MatMul [16, 3] -> y: two
/// prunable groups of 16 channels.
ir::model three_layer_model() {
  return test::build_model({16, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* h1 = b.relu(b.add(b.matmul(x, b.random_constant("w1", {6, 16}, 0.5f)), b.random_constant("b1", {16}, 0.3f)));
    ir::value* h2 = b.relu(b.add(b.matmul(h1, b.random_constant("w2", {16, 16}, 0.5f)), b.random_constant("b2", {16}, 0.3f)));
    return b.add(b.matmul(h2, b.random_constant("w3", {16, 3}, 0.5f)), b.random_constant("b3", {3}, 0.1f));
  });
}

std::vector<runtime::tensor_map> batches(const ir::model& m, int count) {
  runtime::session s(m, {.threads = 1});
  std::vector<runtime::tensor_map> out;
  for (int k = 0; k < count; ++k) out.push_back(runtime::random_inputs(s, 20 + k));
  return out;
}

std::vector<std::size_t> prunable_groups(const prune::channel_analysis& a) {
  std::vector<std::size_t> out;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (a.groups[g].prunable()) out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("the budget goes to the group whose output drops least per cost", "[prune][sensitivity]") {
  const ir::model m = three_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const std::vector<std::size_t> groups = prunable_groups(a);
  REQUIRE(groups.size() == 2);
  std::vector<std::vector<double>> costs(a.groups.size());
  for (std::size_t g : groups) costs[g].assign(a.groups[g].units.size(), 1.0);
  const std::vector<prune::group_sensitivity> curves{{groups[0], {0.0, 0.5, 0.75}, {0.0, 0.01, 0.02}},
                                                     {groups[1], {0.0, 0.5, 0.75}, {0.0, 0.2, 0.4}}};
  SECTION("a quarter of all units: all from the insensitive group") {
    const std::vector<double> r = prune::allocate_by_sensitivity(a, curves, costs, 0.25, 0.9);
    CHECK(r[groups[0]] == Approx(0.5));
    CHECK(r[groups[1]] == Approx(0.0));
  }
  SECTION("past what the insensitive group can lose, the other pays") {
    const std::vector<double> r = prune::allocate_by_sensitivity(a, curves, costs, 0.5, 0.9);
    CHECK(r[groups[0]] == Approx(0.75));  // its last measured share
    CHECK(r[groups[1]] == Approx(0.25));
  }
  SECTION("interpolated between measured shares") {
    CHECK(prune::cosine_drop_at(curves[1], 0.25) == Approx(0.1));
    CHECK(prune::cosine_drop_at(curves[1], 0.625) == Approx(0.3));
  }
}

TEST_CASE("a group's measured drop is the output cosine lost when it alone is cut", "[prune][sensitivity]") {
  const ir::model m = three_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const auto feeds = batches(m, 6);
  prune::channel_analysis_options analysis;
  analysis.ignore_defaults = false;
  prune::selection_options selection;
  selection.round_to = 1;
  prune::sensitivity_options o;
  o.measure_batches = 2;
  o.refit_batches = 4;
  const auto scores = prune::unit_importance(m, a, {});
  const std::vector<prune::group_sensitivity> s = prune::measure_group_sensitivity(m, a, analysis, scores, selection, feeds, o);
  REQUIRE(s.size() == 2);
  for (const prune::group_sensitivity& g : s) {
    REQUIRE(g.levels == std::vector<double>{0.0, 0.25, 0.5, 0.75});
    CHECK(g.cosine_drop[0] == 0.0);
    for (std::size_t i = 1; i < g.cosine_drop.size(); ++i) {
      CHECK(g.cosine_drop[i] >= g.cosine_drop[i - 1]);
      CHECK(g.cosine_drop[i] <= 2.0);
    }
    CHECK(g.cosine_drop.back() > 0.0);
  }
  o.levels = {0.5, 0.25};
  REQUIRE_THROWS_WITH(prune::measure_group_sensitivity(m, a, analysis, scores, selection, feeds, o), Contains("ascend"));
  REQUIRE_THROWS_WITH(prune::measure_group_sensitivity(m, a, analysis, scores, selection, {}, {}), Contains("calibration batches"));
}
