// Multiply-adds at a batch's shapes and each prunable unit's share of them: an attention head
// also takes its share of the two attention products, which grow with the square of the
// sequence, so a budget in multiply-adds at a length is a budget in FLOPs there, not in weights.

#include <catch2/catch.hpp>

#include "inferopt/prune/mac_budget.hpp"
#include "inferopt/prune/prune.hpp"
#include "prune_test_util.hpp"
#include "support/paths.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

ir::model load_export(const std::string& name) {
  ir::model m = ir::load_model(test::source_dir() / "tests/models/corpus" / (name + ".onnx"));
  prune::prepare_for_analysis(m);
  return m;
}

/// Token ids and mask of one sentence of `tokens` tokens; multiply-adds depend on shapes only.
runtime::tensor_map sentence_of(std::int64_t tokens) {
  runtime::tensor_map feeds;
  feeds["input_ids"] = runtime::tensor::zeros(runtime::data_type::int64, {1, tokens});
  feeds["attention_mask"] = runtime::tensor::zeros(runtime::data_type::int64, {1, tokens});
  return feeds;
}

std::vector<runtime::tensor_map> calibration_of(const ir::model& m, int count) {
  runtime::session s(m, {.threads = 1});
  std::vector<runtime::tensor_map> out;
  for (int k = 0; k < count; ++k) out.push_back(runtime::random_inputs(s, 40 + static_cast<std::uint64_t>(k)));
  return out;
}

}  // namespace

TEST_CASE("a head's multiply-adds grow with the square of the sequence, an FFN neuron's linearly", "[prune][mac_budget]") {
  // bert_dynamic_ts: 2 layers, hidden 64, 4 heads of 16, FFN 256, batch and sequence symbolic.
  const ir::model m = load_export("bert_dynamic_ts");
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const std::int64_t tokens = GENERATE(8, 32);
  CAPTURE(tokens);
  const auto costs = prune::unit_mac_costs(a, prune::node_macs_at(m, sentence_of(tokens)));
  int heads = 0, neurons = 0;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (!a.groups[g].prunable()) continue;
    for (double c : costs[g]) {
      if (a.groups[g].sources.size() == 3) {
        // Q, K, V and output projection slices of 64 x 16, and Q K^T and the weighted sum of V.
        CHECK(c == Approx(static_cast<double>(4 * 64 * 16 * tokens + 2 * 16 * tokens * tokens)));
        ++heads;
      } else if (costs[g].size() == 256) {
        CHECK(c == Approx(static_cast<double>(2 * 64 * tokens)));  // one column up, one row down
        ++neurons;
      }
    }
  }
  CHECK(heads == 2 * 4);
  CHECK(neurons == 2 * 256);
}

TEST_CASE("total multiply-adds at a batch count the attention products the weights miss", "[prune][mac_budget]") {
  const ir::model m = load_export("bert_dynamic_ts");
  const auto at = [&](std::int64_t tokens) { return static_cast<double>(prune::total_macs_at(m, sentence_of(tokens))); };
  // T(S) = linear * S + quadratic * S^2 (+ what does not grow): the second difference over
  // S = 8, 16, 24 is 128 * quadratic, with quadratic = 2 layers x 4 heads x 2 products x 16.
  CHECK(at(24) - 2.0 * at(16) + at(8) == Approx(128.0 * (2 * 4 * 2 * 16)));
  // Without feeds, symbolic dims count as 1: one token, as the per-layer report counts.
  CHECK(prune::total_macs_at(m, {}) == prune::total_macs_at(m, sentence_of(1)));
  CHECK(m.graph().inputs().front()->type()->dims->at(1).is_static() == false);  // the copy was shaped, not `m`
}

TEST_CASE("a multiply-add budget removes that share of the multiply-adds at the calibration batch", "[prune][mac_budget]") {
  const ir::model original = load_export("minilm_ts");  // fixed 1 x 16 tokens
  const auto calibration = calibration_of(original, 4);
  prune::prune_options o;
  o.importance.criterion = prune::importance_criterion::output_energy;
  o.selection.global = true;
  o.selection.ratio = 0.3;
  o.selection.round_to = 1;
  o.budget = prune::budget_measure::macs;
  ir::model m = original.clone();
  const prune::prune_summary s = prune::prune_model(m, o, calibration);
  REQUIRE(s.budget_macs_before.has_value());
  CHECK(*s.budget_macs_before == prune::total_macs_at(load_export("minilm_ts"), calibration.front()));
  const double kept = static_cast<double>(*s.budget_macs_after) / static_cast<double>(*s.budget_macs_before);
  CHECK(kept <= 0.7 + 0.02);  // one head of 16 is the coarsest unit: about 2% of a layer
  CHECK(kept >= 0.7 - 0.05);

  SECTION("a weight budget does not count them") {
    o.budget = prune::budget_measure::weights;
    ir::model w = original.clone();
    CHECK_FALSE(prune::prune_model(w, o, calibration).budget_macs_before.has_value());
  }
  SECTION("nothing weighs units by cost without calibrated global scores or a sensitivity allocation") {
    o.selection.global = false;
    ir::model w = original.clone();
    CHECK_THROWS_WITH(prune::prune_model(w, o, calibration), Contains("multiply-add budget weighs calibrated channel scores"));
    o.selection.global = true;
    o.importance.criterion = prune::importance_criterion::l1;
    CHECK_THROWS_WITH(prune::check_budget(o), Contains("calibrated criterion"));
  }
  SECTION("without a batch to count at") {
    ir::model w = original.clone();
    CHECK_THROWS_WITH(prune::prune_model(w, o, {}), Contains("counted at a batch's shapes"));
  }
}

TEST_CASE("budget names parse", "[prune][mac_budget]") {
  CHECK(prune::parse_budget("weights") == prune::budget_measure::weights);
  CHECK(prune::parse_budget("macs") == prune::budget_measure::macs);
  CHECK_FALSE(prune::parse_budget("flops").has_value());
}
