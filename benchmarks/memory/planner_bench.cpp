// The static arena planner on the nine light CNNs (../shared/models/onnx-light) after -O1 and
// ONNX shape inference: how close `plan_graph_memory` gets to the lower bound, and how much
// it saves against no reuse at all.
//
// The planner's result is a size, so its baselines are sizes computed from the same tensor
// list in the same run: the naive plan (every intermediate its own buffer, `naive_MB`) and
// the lower bound (the most bytes live at any one step, `lower_bound_MB`), which no plan
// without in-place reuse can beat. Counters: `arena_over_lower_bound` (goal <= 1.05) and
// `arena_over_naive`; `in_place` is the number of outputs written over a dying input. The
// reported time is one `plan_graph_memory` call (graph walk + greedy-by-size placement).
//
// Per model, three variants:
//   BM_plan_graph_memory/<model>              -O1, in-place hints on (the default)
//   BM_plan_graph_memory/<model>/no_in_place  -O1, in-place hints off: the greedy heuristic alone
//   BM_plan_graph_memory/<model>/fold_all     -O1 with fold-constants' 64 MB cap lifted. The
//       light models store weights as ConstantOfShape nodes; at -O1 a weight over 64 MB (the
//       first Gemm's of AlexNet, VGG-19 and ZFNet-512) stays a node, so its output is an
//       intermediate of the plan. Lifting the cap shows the plan of the activations alone.
//
// Models come from $INFEROPT_SHARED_DIR/models/onnx-light or ../shared beside the
// repository (as the tests find them); without them nothing is registered.

#include <benchmark/benchmark.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"

namespace {

using namespace inferopt;

enum class variant { o1, no_in_place, fold_all };

/// The -O1 pipeline, with fold-constants' size cap lifted when `fold_all`.
pipeline o1_pipeline(bool fold_all) {
  const pass_registry registry = builtin_registry();
  if (!fold_all) return level_pipeline(1, registry);
  std::string text = level_pipeline(1, registry).to_string();
  const std::string fold = "fold-constants";
  const auto at = text.find(fold);
  if (at == std::string::npos) throw error(errc::internal, "-O1 no longer runs fold-constants: " + text);
  text.insert(at + fold.size(), "{max-bytes=1073741824}");
  return parse_pipeline(text, registry);
}

/// The model after the variant's pipeline and shape inference, made once per model/pipeline.
const ir::model& prepared(const std::filesystem::path& dir, const std::string& name, bool fold_all) {
  static std::map<std::pair<std::string, bool>, std::unique_ptr<ir::model>> cache;
  auto& slot = cache[{name, fold_all}];
  if (!slot) {
    auto m = std::make_unique<ir::model>(ir::load_model(dir / ("light_" + name + ".onnx")));
    pipeline p = o1_pipeline(fold_all);
    (void)pass_manager{}.run(p, *m);
    (void)ir::infer_shapes(*m);
    slot = std::move(m);
  }
  return *slot;
}

void BM_plan_graph_memory(benchmark::State& state, const std::filesystem::path& dir, const std::string& name,
                          variant v) {
  const ir::model& m = prepared(dir, name, v == variant::fold_all);
  const runtime::graph_memory_options options{.in_place = v != variant::no_in_place};
  runtime::graph_memory_plan p = runtime::plan_graph_memory(m.graph(), options);
  if (const auto problems = runtime::check_graph_memory_plan(p); !problems.empty()) {
    state.SkipWithError(("invalid plan: " + problems.front()).c_str());
    return;
  }
  if (!p.unknown_size.empty()) {
    state.SkipWithError(("values of unknown size, e.g. " + p.unknown_size.front()).c_str());
    return;
  }
  for (auto _ : state) {
    p = runtime::plan_graph_memory(m.graph(), options);
    benchmark::DoNotOptimize(p.plan.arena_bytes);
  }
  const auto mb = [](std::size_t bytes) { return static_cast<double>(bytes) / 1e6; };
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.tensors.size()));
  state.counters["tensors"] = static_cast<double>(p.tensors.size());
  state.counters["arena_MB"] = mb(p.plan.arena_bytes);
  state.counters["lower_bound_MB"] = mb(p.plan.lower_bound_bytes);
  state.counters["naive_MB"] = mb(p.plan.naive_bytes);
  state.counters["arena_over_lower_bound"] =
      static_cast<double>(p.plan.arena_bytes) / static_cast<double>(p.plan.lower_bound_bytes);
  state.counters["arena_over_naive"] = static_cast<double>(p.plan.arena_bytes) / static_cast<double>(p.plan.naive_bytes);
  state.counters["in_place"] = static_cast<double>(p.plan.in_place_count);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (const auto dir = test::light_models_dir()) {
    for (const char* model : test::light_model_names) {
      const std::string name = model;
      const std::string base = "BM_plan_graph_memory/" + name;
      benchmark::RegisterBenchmark(base.c_str(), BM_plan_graph_memory, *dir, name, variant::o1);
      benchmark::RegisterBenchmark((base + "/no_in_place").c_str(), BM_plan_graph_memory, *dir, name,
                                   variant::no_in_place);
      benchmark::RegisterBenchmark((base + "/fold_all").c_str(), BM_plan_graph_memory, *dir, name, variant::fold_all);
    }
  } else {
    std::cerr << "memory_planner_bench: ../shared/models/onnx-light is absent (set INFEROPT_SHARED_DIR); "
                 "no benchmark registered\n";
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
