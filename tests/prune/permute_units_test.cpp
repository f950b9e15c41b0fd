// Reordering a group's units: the model computes the same function (every site of the group
// moves together), the weights move as asked, sorting by importance orders the units, and
// what cannot be reordered is refused.

#include "inferopt/prune/permute_units.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/prune.hpp"
#include "prune_test_util.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

/// x[32, 64] -> MatMul W1[64, 128] + b1 -> Relu -> MatMul W2[128, 48] + b2: one group of 128 neurons.
ir::model feed_forward() {
  return test::build_model({32, 64}, [](ir::graph_builder& g, ir::value* x) {
    ir::value* h = g.relu(g.add(g.matmul(x, g.random_constant("w1", {64, 128}, 0.3f)), g.random_constant("b1", {128}, 0.2f)));
    return g.add(g.matmul(h, g.random_constant("w2", {128, 48}, 0.3f)), g.random_constant("b2", {48}, 0.2f));
  });
}

std::vector<std::size_t> shuffled(std::size_t n, std::uint32_t seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

/// Checks that `m` and `changed` give the same outputs on seeded inputs.
void check_same_function(const ir::model& m, const ir::model& changed) {
  runtime::session want_session(m, {.threads = 1}), got_session(changed, {.threads = 1});
  const runtime::tensor_map feeds = runtime::random_inputs(want_session, 5);
  const runtime::tensor_map want = want_session.run(feeds), got = got_session.run(feeds);
  for (const auto& [name, t] : want) {
    INFO("output " << name);
    CHECK(test::compare_tensors(got.at(name), t, 1e-4, 1e-5).empty());
  }
}

std::vector<float> floats_of(const ir::node* n, std::size_t input, const ir::model& m) {
  const std::vector<double> v = ir::constant_floats(n->input(input), m.ir_version).value();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("permuting an FFN's neurons moves FFN up's columns and bias and FFN down's rows together: same outputs", "[prune][permute]") {
  const ir::model original = feed_forward();
  ir::model m = test::copy_of(original);
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const auto groups = test::prunable_groups(a);
  REQUIRE(groups.size() == 1);
  const std::size_t group = static_cast<std::size_t>(groups[0] - a.groups.data());
  const std::vector<std::size_t> order = shuffled(128, 7);
  prune::permute_units(m, a, group, order);
  check_same_function(original, m);

  std::vector<const ir::node*> products;
  for (const ir::node* n : m.graph().nodes()) {
    if (n->is("MatMul")) products.push_back(n);
  }
  std::vector<const ir::node*> before;
  for (const ir::node* n : original.graph().nodes()) {
    if (n->is("MatMul")) before.push_back(n);
  }
  const std::vector<float> w1 = floats_of(before[0], 1, original), w1p = floats_of(products[0], 1, m);
  const std::vector<float> w2 = floats_of(before[1], 1, original), w2p = floats_of(products[1], 1, m);
  for (std::size_t j = 0; j < 128; ++j) {
    for (std::size_t i = 0; i < 64; ++i) REQUIRE(w1p[i * 128 + j] == w1[i * 128 + order[j]]);
    for (std::size_t c = 0; c < 48; ++c) REQUIRE(w2p[j * 48 + c] == w2[order[j] * 48 + c]);
  }
}

TEST_CASE("permuting the heads and FFN neurons of torch exports leaves their outputs unchanged", "[prune][permute][transformer]") {
  const char* name = GENERATE("bert_ts", "minilm_ts", "minilm_dynamo", "bert_dynamo");
  CAPTURE(name);
  ir::model original = ir::load_model(test::source_dir() / "tests/models/corpus" / (std::string(name) + ".onnx"));
  prune::prepare_for_analysis(original);
  ir::model m = test::copy_of(original);
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  std::size_t heads = 0, permuted = 0;
  for (const prune::channel_group* g : test::prunable_groups(a)) {
    const std::size_t group = static_cast<std::size_t>(g - a.groups.data());
    if (g->sources.size() == 3) ++heads;
    prune::permute_units(m, a, group, shuffled(g->units.size(), static_cast<std::uint32_t>(group)));
    ++permuted;
  }
  CHECK(heads > 0);
  CHECK(permuted > heads);
  check_same_function(original, m);
}

TEST_CASE("sorting units by importance puts the least important first, and changes nothing the model computes", "[prune][permute]") {
  const ir::model original = feed_forward();
  ir::model m = test::copy_of(original);
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  prune::importance_options io;
  io.criterion = prune::importance_criterion::l2;
  const auto before = prune::unit_importance(m, a, io);
  CHECK(prune::sort_units_by_importance(m, a, before) == 1);
  check_same_function(original, m);
  const auto after = prune::unit_importance(m, test::analyze_without_defaults(m), io);
  const auto group = static_cast<std::size_t>(test::prunable_groups(a)[0] - a.groups.data());
  CHECK(std::is_sorted(after[group].begin(), after[group].end()));
  std::vector<double> expected = before[group];
  std::sort(expected.begin(), expected.end());
  for (std::size_t u = 0; u < expected.size(); ++u) CHECK(after[group][u] == Approx(expected[u]).epsilon(1e-9));
  // Sorted already: nothing moves.
  ir::model again = test::copy_of(m);
  CHECK(prune::sort_units_by_importance(again, test::analyze_without_defaults(again), after) == 0);
}

TEST_CASE("permute units refuses an order that is not a permutation, and a pinned group", "[prune][permute]") {
  ir::model m = feed_forward();
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const auto group = static_cast<std::size_t>(test::prunable_groups(a)[0] - a.groups.data());
  std::vector<std::size_t> order = shuffled(128, 3);
  order[5] = order[6];
  CHECK_THROWS_WITH(prune::permute_units(m, a, group, order), Catch::Contains("not a permutation"));
  CHECK_THROWS_WITH(prune::permute_units(m, a, group, shuffled(127, 3)), Catch::Contains("not a permutation"));
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (a.groups[g].prunable() || a.groups[g].units.empty()) continue;
    CHECK_THROWS_WITH(prune::permute_units(m, a, g, shuffled(a.groups[g].units.size(), 3)), Catch::Contains("pinned"));
  }
}
