// Shape inference: ours (ir::infer_shapes) against libonnx's (ir::infer_shapes_with_onnx, the
// ONNX library's InferShapes over the protobuf message we build for it), in the same run.
//
// Models: make_resnet50(seed 1) in memory (the 102 MB ResNet-50 of docs/BENCHMARKS.md) and,
// when INFEROPT_BERT_MODEL names a file, that model (the torch-exported BERT-base of
// benchmarks/optimize/export_bert.py). Each iteration clears the types of intermediate values
// (untimed), then times both sides on their own copy, alternating which runs first so cache
// state does not favour one. Reported: our time; `ratio_vs_onnx` = ours / libonnx's (goal
// <= 1), and the values of unknown shape each leaves (libonnx does not evaluate the Shape ->
// Gather -> Concat -> Reshape chains of exported transformers).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"

namespace {

using namespace inferopt;

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ir::model without_intermediate_types(const ir::model& m) {
  ir::model copy = m.clone();
  for (ir::value* v : copy.graph().values()) {
    if (v->origin() == ir::value_origin::node_output && !v->is_graph_output()) copy.graph().clear_value_info(v);
  }
  return copy;
}

void compare(benchmark::State& state, const ir::model& m) {
  double ours_total = 0, theirs_total = 0;
  std::size_t ours_unknown = 0, theirs_unknown = 0;
  bool ours_first = true;
  for (auto _ : state) {
    ir::model a = without_intermediate_types(m);
    ir::model b = without_intermediate_types(m);
    double ours = 0, theirs = 0;
    auto run_ours = [&] { ours = seconds([&] { benchmark::DoNotOptimize(ir::infer_shapes(a)); }); };
    auto run_theirs = [&] { theirs = seconds([&] { benchmark::DoNotOptimize(ir::infer_shapes_with_onnx(b)); }); };
    if (ours_first) run_ours(), run_theirs();
    else run_theirs(), run_ours();
    ours_first = !ours_first;
    state.SetIterationTime(ours);
    ours_total += ours;
    theirs_total += theirs;
    ours_unknown = ir::count_unknown_shapes(a.graph());
    theirs_unknown = ir::count_unknown_shapes(b.graph());
  }
  state.counters["onnx_ms"] = 1e3 * theirs_total / static_cast<double>(state.iterations());
  state.counters["ratio_vs_onnx"] = ours_total / theirs_total;
  state.counters["unknown_ours"] = static_cast<double>(ours_unknown);
  state.counters["unknown_onnx"] = static_cast<double>(theirs_unknown);
  state.counters["nodes"] = static_cast<double>(m.graph().node_count());
}

void BM_infer_shapes_resnet50(benchmark::State& state) {
  static const ir::model m = ir::make_resnet50(1);
  compare(state, m);
}
BENCHMARK(BM_infer_shapes_resnet50)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

void BM_infer_shapes_bert(benchmark::State& state) {
  const char* path = std::getenv("INFEROPT_BERT_MODEL");
  if (!path) {
    state.SkipWithError("set INFEROPT_BERT_MODEL to a BERT export (benchmarks/optimize/export_bert.py)");
    return;
  }
  static const ir::model m = ir::load_model(path);
  compare(state, m);
}
BENCHMARK(BM_infer_shapes_bert)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace

BENCHMARK_MAIN();
