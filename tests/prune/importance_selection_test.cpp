// Importance criteria and unit selection: which channels go, and how many.

#include "inferopt/prune/channel_multiple.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/prune/prune.hpp"

#include <catch2/catch.hpp>

#include <cstring>

#include "inferopt/runtime/kernel.hpp"
#include "prune_test_util.hpp"

using namespace inferopt;

namespace {

/// x -> Conv(8 channels) -> BN -> Relu -> Conv(2): one prunable group of 8 units, unit u =
/// channel u. Filter u of the first conv is scaled by `filter_scale[u]`, BN gamma is `gamma`.
ir::model scaled_model(const std::vector<float>& filter_scale, const std::vector<float>& gamma) {
  ir::model m = test::build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.relu(b.batch_norm(b.conv(x, 8, {.kernel = 1}))), 2);
  });
  ir::graph& g = m.graph();
  const ir::node* conv = g.node_list()[0];
  const ir::node* bn = g.node_list()[1];
  std::vector<float> w(8 * 3, 0.0f);
  for (std::size_t u = 0; u < 8; ++u) {
    for (std::size_t k = 0; k < 3; ++k) w[u * 3 + k] = filter_scale[u] * (k == 1 ? -1.0f : 1.0f);
  }
  g.set_initializer(conv->input(1), ir::tensor::from_values<float>("", {8, 3, 1, 1}, w));
  g.set_initializer(bn->input(1), ir::tensor::from_values<float>("", {8}, gamma));
  return m;
}

std::vector<std::size_t> removed_by(const ir::model& m, prune::importance_criterion c, double ratio = 0.5,
                                    std::uint64_t seed = 0) {
  const auto a = test::analyze_without_defaults(m);
  prune::importance_options io;
  io.criterion = c;
  io.seed = seed;
  prune::selection_options so;
  so.ratio = ratio;
  so.round_to = 1;
  const auto plan = prune::select_units(a, prune::unit_importance(m, a, io), so);
  REQUIRE(plan.groups.size() == 1);
  return plan.groups[0].removed_units;
}

const std::vector<float> ones(8, 1.0f);

}  // namespace

TEST_CASE("l1 and l2 remove the filters with the smallest norms", "[prune][importance]") {
  const ir::model m = scaled_model({5, 1, 4, 0.5f, 3, 2, 6, 0.1f}, ones);
  using V = std::vector<std::size_t>;
  CHECK(removed_by(m, prune::importance_criterion::l1) == V{1, 3, 5, 7});
  CHECK(removed_by(m, prune::importance_criterion::l2) == V{1, 3, 5, 7});
}

TEST_CASE("bn removes the channels with the smallest |gamma| whatever the filters", "[prune][importance]") {
  const ir::model m = scaled_model({5, 1, 4, 0.5f, 3, 2, 6, 0.1f}, {0.1f, 2, -3, 1, 0.2f, 4, -0.05f, 5});
  CHECK(removed_by(m, prune::importance_criterion::bn_scale) == std::vector<std::size_t>{0, 3, 4, 6});
}

TEST_CASE("fpgm removes the filters nearest the others, not the smallest", "[prune][importance]") {
  // Filters on a line: 0 and 7 are far from everything, the middle ones are redundant.
  const ir::model m = scaled_model({-10, -1, -0.5f, 0, 0.25f, 0.5f, 1, 10}, ones);
  const auto removed = removed_by(m, prune::importance_criterion::fpgm);
  CHECK(std::find(removed.begin(), removed.end(), 0) == removed.end());
  CHECK(std::find(removed.begin(), removed.end(), 7) == removed.end());
  CHECK(removed.size() == 4);
}

TEST_CASE("random scores follow the seed", "[prune][importance]") {
  const ir::model m = scaled_model(ones, ones);
  const auto a = removed_by(m, prune::importance_criterion::random, 0.5, 1);
  CHECK(a == removed_by(m, prune::importance_criterion::random, 0.5, 1));
  bool some_seed_differs = false;
  for (std::uint64_t seed = 2; seed < 8; ++seed) {
    some_seed_differs = some_seed_differs || a != removed_by(m, prune::importance_criterion::random, 0.5, seed);
  }
  CHECK(some_seed_differs);
}

TEST_CASE("coupled channels combine their scores by mean, sum or max", "[prune][importance]") {
  // Two branches added: unit u couples channel u of both convs.
  ir::model m = test::build_model({1, 2, 3, 3}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.relu(b.add(b.conv(x, 2, {.kernel = 1, .bias = false}), b.conv(x, 2, {.kernel = 1, .bias = false}))), 1);
  });
  ir::graph& g = m.graph();
  g.set_initializer(g.node_list()[0]->input(1), ir::tensor::from_values<float>("", {2, 2, 1, 1}, {9, 0, 1, 0}));
  g.set_initializer(g.node_list()[1]->input(1), ir::tensor::from_values<float>("", {2, 2, 1, 1}, {0, 0, 0, 6}));
  const auto a = test::analyze_without_defaults(m);
  REQUIRE(test::prunable_groups(a).size() == 1);
  auto scores = [&](prune::score_reduction r) {
    prune::importance_options io;
    io.reduction = r;
    for (const auto& s : prune::unit_importance(m, a, io)) {
      if (!s.empty()) return s;
    }
    return std::vector<double>{};
  };
  CHECK(scores(prune::score_reduction::mean) == std::vector<double>{4.5, 3.5});
  CHECK(scores(prune::score_reduction::sum) == std::vector<double>{9, 7});
  CHECK(scores(prune::score_reduction::max) == std::vector<double>{9, 6});
}

TEST_CASE("kept counts are rounded up to multiples of round-to", "[prune][selection]") {
  const ir::model m = test::build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.relu(b.conv(x, 16)), 2);
  });
  const auto a = test::analyze_without_defaults(m);
  const auto scores = prune::unit_importance(m, a);
  auto removed = [&](double ratio, std::int64_t round_to) {
    prune::selection_options o;
    o.ratio = ratio;
    o.round_to = round_to;
    return prune::select_units(a, scores, o).removed_units();
  };
  CHECK(removed(0.3, 8) == 0);   // 11.2 kept rounds up to 16
  CHECK(removed(0.5, 8) == 8);
  CHECK(removed(0.3, 4) == 4);   // 11.2 -> 12
  CHECK(removed(0.3, 1) == 4);   // 11.2 -> 12
  CHECK(removed(0.9, 8) == 8);   // never below one step
  CHECK(removed(0.0, 1) == 0);
  CHECK_THROWS_AS(removed(1.0, 1), error);
  CHECK_THROWS_AS(removed(0.5, 0), error);
}

TEST_CASE("by default kept counts fill the CPU runtimes' channel blocks of this machine", "[prune][selection]") {
  const bool avx512 = std::strcmp(runtime::dense_gemm_isa(), "avx512") == 0;
  REQUIRE(prune::preferred_channel_multiple() == (avx512 ? 16 : 8));
  const ir::model m = test::build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.relu(b.conv(x, 48)), 2);
  });
  const auto a = test::analyze_without_defaults(m);
  prune::selection_options o;
  REQUIRE(o.round_to == prune::preferred_channel_multiple());
  o.ratio = 0.3;  // 33.6 of 48 kept: 48 in blocks of 16, 40 in blocks of 8
  CHECK(prune::select_units(a, prune::unit_importance(m, a), o).removed_units() == (avx512 ? 0 : 8));
}

TEST_CASE("global ranking prunes unevenly but never past the per-group cap", "[prune][selection]") {
  const ir::model m = test::build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.relu(b.conv(b.relu(b.conv(x, 16)), 16)), 2);
  });
  const auto a = test::analyze_without_defaults(m);
  REQUIRE(test::prunable_groups(a).size() == 2);
  // Hand-made scores: group A's are spread out, group B's all equal.
  std::vector<std::vector<double>> scores = prune::unit_importance(m, a);
  bool first = true;
  for (auto& s : scores) {
    if (s.empty()) continue;
    for (std::size_t u = 0; u < s.size(); ++u) s[u] = first ? 0.01 + static_cast<double>(u * u) : 1.0;
    first = false;
  }
  prune::selection_options o;
  o.ratio = 0.5;
  o.round_to = 1;
  o.global = true;
  o.max_group_ratio = 0.6;
  const auto plan = prune::select_units(a, scores, o);
  CHECK(plan.removed_units() == 16);
  for (const auto& g : plan.groups) CHECK(g.removed_units.size() <= 9);  // 0.6 * 16
  REQUIRE(plan.groups.size() == 2);
  CHECK(plan.groups[0].removed_units.size() != plan.groups[1].removed_units.size());
}

TEST_CASE("prune_model reports per-layer params and MACs before and after", "[prune][report]") {
  ir::model m = test::build_model({1, 3, 8, 8}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = b.relu(b.batch_norm(b.conv(x, 16)));
    y = b.relu(b.batch_norm(b.conv(y, 32)));
    return b.gemm(b.flatten(b.global_average_pool(b.conv(y, 32))), 10);
  });
  prune::prune_options o;
  o.selection.ratio = 0.5;
  const prune::prune_summary s = prune::prune_model(m, o);
  CHECK(s.groups == 4);
  CHECK(s.prunable_groups == 2);  // the first conv and the classifier are ignored by default
  CHECK(s.removed_units == 16 + 16);
  CHECK(s.macs_after < s.macs_before);
  CHECK(s.params_after < s.params_before);
  REQUIRE(s.layers.size() == 6);
  CHECK(s.layers[0].after.macs == s.layers[0].before.macs);
  CHECK(s.layers[2].before.output_channels == 32);
  CHECK(s.layers[2].after.output_channels == 16);
  CHECK(s.layers[2].after.macs * 2 == s.layers[2].before.macs);  // its inputs come from the ignored first conv
  CHECK(s.layers[4].after.macs * 4 == s.layers[4].before.macs);  // half the inputs, half the outputs
}
