// Channel groups of exported transformers: attention heads (Q, K and V projections pruned
// together with the output projection's rows, through Reshape, Transpose and the two batched
// MatMuls of attention) and FFN neurons, on the corpus's TorchScript and dynamo exports.
// Pruning them must give exactly the model whose readers ignore the removed channels.

#include <catch2/catch.hpp>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/prune/prune.hpp"
#include "prune_test_util.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

/// A corpus export as prune_model sees it.
ir::model load_export(const std::string& name) {
  ir::model m = ir::load_model(test::source_dir() / "tests/models/corpus" / (name + ".onnx"));
  prune::prepare_for_analysis(m);
  return m;
}

/// Prunable groups made by three MatMuls (Q, K, V) and those made by one (FFN).
struct transformer_groups {
  std::vector<const prune::channel_group*> heads, neurons;
};

transformer_groups classify(const prune::channel_analysis& a) {
  transformer_groups out;
  for (const prune::channel_group* g : test::prunable_groups(a)) {
    if (g->sources.size() == 3) out.heads.push_back(g);
    if (g->sources.size() == 1 && a.sources[g->sources[0]].producer->is("MatMul")) out.neurons.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("attention heads of torch exports form one prunable group per layer, Q, K and V together", "[prune][groups][transformer]") {
  // bert_*: 2 layers, hidden 64, 4 heads of 16, FFN 256; minilm_*: 6 layers, hidden 32, 2 heads of 16, FFN 128.
  const auto [name, layers, heads, ffn] =
      GENERATE(std::tuple{"bert_dynamic_ts", 2, 4, 256}, std::tuple{"bert_ts", 2, 4, 256}, std::tuple{"minilm_ts", 6, 2, 128},
               std::tuple{"minilm_dynamo", 6, 2, 128}, std::tuple{"bert_dynamo", 2, 4, 256});
  CAPTURE(name);
  const ir::model m = load_export(name);
  const prune::channel_analysis a = test::analyze_without_defaults(m);
  const transformer_groups g = classify(a);
  REQUIRE(g.heads.size() == static_cast<std::size_t>(layers));
  for (const prune::channel_group* group : g.heads) {
    CHECK(group->units.size() == static_cast<std::size_t>(heads));
    for (std::size_t s : group->sources) CHECK(a.sources[s].producer->is("MatMul"));
    CHECK(group->units.front().channels.size() == 3 * 16);  // one head of Q, K and V
  }
  const auto ffn_groups = std::count_if(g.neurons.begin(), g.neurons.end(),
                                       [&](const prune::channel_group* n) { return n->units.size() == static_cast<std::size_t>(ffn); });
  CHECK(ffn_groups == layers);
}

TEST_CASE("pruning half the heads and FFN neurons of torch exports equals zeroing their readers", "[prune][transformer]") {
  const char* name = GENERATE("bert_dynamic_ts", "bert_ts", "minilm_ts", "minilm_dynamo", "bert_dynamo");
  CAPTURE(name);
  const ir::model m = load_export(name);
  const test::pruned_pair r = test::prune_and_check_equivalent(m, 0.5);
  CHECK(r.plan.removed_units() > 0);
  // The pruned model is a valid ONNX model with the original interface.
  const ir::model reloaded = ir::parse_model(ir::serialize_model(r.pruned));
  CHECK(reloaded.graph().outputs().size() == m.graph().outputs().size());
}

TEST_CASE("a Softmax over the channels pins them; one over another axis carries them", "[prune][groups]") {
  for (const std::int64_t axis : {1, -1}) {
    CAPTURE(axis);
    const ir::model m = test::build_model({2, 3, 8}, [&](ir::graph_builder& b, ir::value* x) {
      ir::value* h = b.matmul(x, b.random_constant("w1", {8, 16}, 0.1f));
      std::vector<ir::attribute> attributes;
      attributes.push_back(ir::attribute::make_int("axis", axis));
      ir::value* p = b.op("Softmax", {h}, std::move(attributes));
      return b.matmul(p, b.random_constant("w2", {16, 4}, 0.1f));
    });
    const prune::channel_analysis a = test::analyze_without_defaults(m);
    CHECK(test::prunable_groups(a).size() == (axis == 1 ? 1u : 0u));
  }
}
