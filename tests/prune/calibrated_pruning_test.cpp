// Calibrated pruning: output-energy importance and the refit inside prune_model, checked
// against what the executor computes on the same batches, not against the moments the
// library works with.

#include "inferopt/prune/calibrated_pruning.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "inferopt/prune/prune.hpp"
#include "prune_test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

std::vector<runtime::tensor_map> batches(const ir::model& m, int count) {
  runtime::session s(m, {.threads = 1});
  std::vector<runtime::tensor_map> out;
  for (int k = 0; k < count; ++k) out.push_back(runtime::random_inputs(s, 10 + k));
  return out;
}

/// The hidden activation h of each batch, read with an observer: [rows * 10].
std::vector<std::vector<float>> hidden_of(const ir::model& m, const std::vector<runtime::tensor_map>& feeds, const std::string& name) {
  std::vector<std::vector<float>> out;
  runtime::session_options o;
  o.threads = 1;
  o.on_value = [&](std::string_view v, const runtime::tensor& t) {
    if (v == name) out.push_back(t.to_float());
  };
  runtime::session s(m, o);
  for (const auto& f : feeds) (void)s.run(f);
  return out;
}

const ir::node* node_of(const ir::model& m, std::string_view op, int index) {
  int seen = 0;
  for (const ir::node* n : m.graph().nodes()) {
    if (n->is(op) && seen++ == index) return n;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("output energy of a channel is the mean energy it adds to its reader's output", "[prune][calibrated]") {
  const ir::model m = test::two_layer_model();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const auto feeds = batches(m, 3);
  const auto scores = prune::output_energy_importance(m, a, feeds);
  const std::vector<const prune::channel_group*> groups = test::prunable_groups(a);
  REQUIRE(groups.size() == 1);
  const std::size_t g = static_cast<std::size_t>(groups[0] - a.groups.data());
  REQUIRE(scores[g].size() == 10);

  const ir::node* reader = node_of(m, "MatMul", 1);
  const std::vector<double> w2 = *ir::constant_floats(reader->input(1), m.ir_version);
  std::vector<double> want(10, 0.0);
  std::int64_t rows = 0;
  for (const std::vector<float>& h : hidden_of(m, feeds, reader->input(0)->name())) {
    for (std::size_t r = 0; r < h.size() / 10; ++r, ++rows) {
      for (std::size_t c = 0; c < 10; ++c) {
        for (std::size_t j = 0; j < 3; ++j) want[c] += std::pow(h[r * 10 + c] * w2[c * 3 + j], 2);
      }
    }
  }
  for (std::size_t c = 0; c < 10; ++c) {
    CAPTURE(c);
    const std::size_t u = a.unit_of_channel[a.sources[groups[0]->sources[0]].first + static_cast<std::int64_t>(c)];
    CHECK(scores[g][u] == Approx(want[c] / static_cast<double>(rows)).epsilon(1e-6));
  }
}

TEST_CASE("prune_model with calibration refits the reader: its output error is the reported one and below the cut's", "[prune][calibrated]") {
  const ir::model original = test::two_layer_model();
  const auto feeds = batches(original, 4);
  for (const bool refit : {false, true}) {
    CAPTURE(refit);
    ir::model m = test::copy_of(original);
    prune::prune_options o;
    o.analysis.ignore_defaults = false;
    o.importance.criterion = prune::importance_criterion::output_energy;
    o.selection.ratio = 0.4;
    o.selection.round_to = 1;
    o.refit = refit;
    const prune::prune_summary s = prune::prune_model(m, o, feeds);
    CHECK(s.removed_units == 4);
    REQUIRE(s.refits.size() == (refit ? 1u : 0u));

    runtime::session before(original, {.threads = 1}), after(m, {.threads = 1});
    double diff = 0.0, norm = 0.0;
    for (const auto& f : feeds) {
      const std::vector<float> y = before.run(f).begin()->second.to_float();
      const std::vector<float> y2 = after.run(f).begin()->second.to_float();
      for (std::size_t i = 0; i < y.size(); ++i) {
        diff += std::pow(double(y2[i]) - y[i], 2);
        norm += double(y[i]) * y[i];
      }
    }
    if (refit) {
      const prune::reader_refit& r = s.refits.front();
      CHECK(r.inputs_before == 10);
      CHECK(r.inputs_after == 6);
      CHECK(diff / norm == Approx(r.relative_error_refit).epsilon(1e-3).margin(1e-9));
      CHECK(r.relative_error_refit < r.relative_error_cut);
    }
  }
}

TEST_CASE("the energy criterion refuses to run without calibration batches", "[prune][calibrated]") {
  ir::model m = test::two_layer_model();
  prune::prune_options o;
  o.importance.criterion = prune::importance_criterion::output_energy;
  CHECK_THROWS_WITH(prune::prune_model(m, o), Contains("calibration"));
}

TEST_CASE("global selection by cost removes cheap unimportant units first and stops at the cost budget", "[prune][selection]") {
  // Two groups: a head-like group of 2 units costing 8 each, a neuron group of 8 units costing 1.
  prune::channel_analysis a;
  a.groups.resize(2);
  a.groups[0].units.resize(2);
  a.groups[1].units.resize(8);
  const std::vector<std::vector<double>> importance{{4.0, 100.0}, {1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0}};
  prune::selection_options o;
  o.global = true;
  o.round_to = 1;
  o.ratio = 0.5;  // of 24
  o.unit_costs = {{8.0, 8.0}, std::vector<double>(8, 1.0)};
  const prune::pruning_plan plan = prune::select_units(a, importance, o);
  // Per cost: head 0 is 0.5, the neurons 1 and 5, head 1 12.5: head 0 (8) then four neurons (4) = 12.
  REQUIRE(plan.groups.size() == 2);
  CHECK(plan.groups[0].removed_units == std::vector<std::size_t>{0});
  CHECK(plan.groups[1].removed_units == std::vector<std::size_t>{0, 1, 2, 3});
}

namespace {

/// The two-layer model's hidden group, its calibration batches, and what the refit leaves.
struct hidden_group_case {
  ir::model m = test::two_layer_model();
  prune::channel_analysis a = test::analyze_without_defaults(m);
  std::vector<runtime::tensor_map> feeds = batches(m, 4);
  prune::refit_plan_options options;
  std::size_t g = static_cast<std::size_t>(test::prunable_groups(a)[0] - a.groups.data());

  /// The refit's relative output error once `removed` (ascending) are cut.
  [[nodiscard]] double left_after(std::vector<std::size_t> removed) const {
    prune::pruning_plan plan;
    plan.groups.push_back({g, std::move(removed)});
    const auto refits = prune::plan_refits(m, a, plan, feeds, options);
    REQUIRE(refits.size() == 1);
    return refits[0].report.relative_error_refit;
  }
};

}  // namespace

TEST_CASE("obs importance of a unit is what the refit leaves when that unit alone is removed", "[prune][calibrated]") {
  const hidden_group_case c;
  const auto scores = prune::reconstruction_importance(c.m, c.a, c.feeds, c.options);
  // Refit after removing each unit alone: the left-over errors must rank and scale like the scores.
  std::vector<double> left;
  for (std::size_t u = 0; u < 10; ++u) left.push_back(c.left_after({u}));
  for (std::size_t u = 1; u < 10; ++u) {
    CAPTURE(u);
    CHECK(scores[c.g][u] / scores[c.g][0] == Approx(left[u] / left[0]).epsilon(2e-2));
  }
}

TEST_CASE("greedy obs scores add up to what the refit leaves once the cheapest units go together", "[prune][calibrated]") {
  const hidden_group_case c;
  const std::vector<double> scores = prune::greedy_reconstruction_importance(c.m, c.a, c.feeds, c.options)[c.g];
  std::vector<std::size_t> order(10);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return scores[x] < scores[y]; });
  const auto left_after = [&](std::size_t count) {
    std::vector<std::size_t> removed(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(removed.begin(), removed.end());
    return c.left_after(removed);
  };
  // Removing a set and refitting the rest leaves an error that the OBS steps sum exactly; the
  // scores are those steps, raised only where a later step is cheaper than an earlier one.
  const double first = left_after(1);
  REQUIRE(first > 0.0);
  double summed = 0.0;
  for (std::size_t count = 1; count <= 6; ++count) {
    CAPTURE(count);
    summed += scores[order[count - 1]];
    if (scores[order[count]] == scores[order[count - 1]]) continue;  // a tie: the prefix is not one set
    // Here every step costs more than the one before, so the sum is exact up to the ridge,
    // which the refit takes relative to the kept inputs.
    CHECK(summed / scores[order[0]] == Approx(left_after(count) / first).epsilon(1e-2));
  }
  // The cheapest unit by greedy removal is the one single-unit OBS ranks cheapest.
  const std::vector<double> single = prune::reconstruction_importance(c.m, c.a, c.feeds, c.options)[c.g];
  CHECK(std::min_element(single.begin(), single.end()) - single.begin() == static_cast<std::ptrdiff_t>(order[0]));
  CHECK(scores[order[0]] == Approx(single[order[0]]).epsilon(1e-9));
}
