// The executor's float GEMM backends on the products transformers and CNNs run, in one run.
//
// Contenders, all with the same thread count:
//   - eigen: the Eigen build the executor used before oneDNN (the widest the CPU has);
//   - sgemm: oneDNN's sgemm, what nn::gemm runs now for products of two activations;
//   - prepacked: oneDNN's matmul on weights reordered once (nn_constant_product.hpp), what
//     MatMul/Gemm/Attention run when B is an initializer.
// Shapes: BERT-base at 128 tokens (the Q/K/V, packed QKV, FFN up and down projections; the
// per-head score and value products), and ResNet-sized 1x1 and im2col'd 3x3 products.
// `copies` weights are cycled through, so that with 24 copies (BERT-base's count of large
// matrices is 72) every product reads its weights from memory, as in a whole model, and with 1
// from cache. Each iteration runs every contender once, rotating who goes first; the reported
// time is the executor's choice (prepacked for weights, sgemm for activations), and the
// counters are the others' total time over its own: speedup_vs_eigen, speedup_vs_sgemm.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nn_constant_product.hpp"
#include "nn_gemm.hpp"

namespace {

namespace nn = inferopt::runtime::nn;
using clock_type = std::chrono::steady_clock;

struct shape {
  const char* name;
  std::int64_t m, k, n;
  bool weights;  // B is a layer's weights (prepacked), not an activation
  bool trans_b;
};
constexpr shape shapes[] = {
    {"bert_q_k_v", 128, 768, 768, true, false},     {"bert_qkv_packed", 128, 768, 2304, true, false},
    {"bert_ffn_up", 128, 768, 3072, true, false},   {"bert_ffn_down", 128, 3072, 768, true, false},
    {"bert_scores_qkT", 128, 64, 128, false, true}, {"bert_values_pv", 128, 128, 64, false, false},
    {"resnet_1x1_56", 3136, 64, 256, false, false}, {"resnet_3x3_28", 784, 1152, 128, false, false},
};

std::vector<float> random_matrix(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void BM_gemm_backends(benchmark::State& state) {
  const shape& s = shapes[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  const auto copies = static_cast<std::size_t>(state.range(2));
  const std::vector<float> a = random_matrix(static_cast<std::size_t>(s.m * s.k), 1);
  std::vector<std::vector<float>> b;
  std::vector<std::unique_ptr<nn::constant_weight_product>> packed;
  for (std::size_t i = 0; i < copies; ++i) {
    b.push_back(random_matrix(static_cast<std::size_t>(s.k * s.n), 2 + static_cast<unsigned>(i)));
    packed.push_back(std::make_unique<nn::constant_weight_product>());
    packed.back()->set_weights(b.back().data(), s.k, s.n, s.trans_b);
  }
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  auto args_for = [&](std::size_t copy) {
    nn::gemm_args<float> g;
    g.m = s.m, g.n = s.n, g.k = s.k;
    g.a = a.data(), g.lda = s.k;
    g.b = b[copy].data(), g.ldb = s.trans_b ? s.k : s.n, g.trans_b = s.trans_b;
    g.c = c.data(), g.ldc = s.n;
    return g;
  };
  auto eigen = [&](std::size_t copy) { nn::chosen_config().gemm_f32(args_for(copy), threads); };
  auto sgemm = [&](std::size_t copy) {
    if (!nn::onednn_gemm(args_for(copy), threads)) state.SkipWithError("the build has no oneDNN");
  };
  auto prepacked = [&](std::size_t copy) {
    if (!packed[copy]->run(b[copy].data(), a.data(), s.m, nullptr, c.data(), threads)) state.SkipWithError("the build has no oneDNN");
  };
  for (std::size_t i = 0; i < copies; ++i) prepacked(i);  // the reorder happens once, outside the timing
  double seconds[3] = {0, 0, 0};
  std::size_t copy = 0, turn = 0;
  const std::size_t chosen_index = s.weights ? 2 : 1;
  for (auto _ : state) {
    for (std::size_t r = 0; r < 3; ++r) {
      const std::size_t who = (turn + r) % 3;
      const auto start = clock_type::now();
      if (who == 0) eigen(copy);
      else if (who == 1) sgemm(copy);
      else prepacked(copy);
      const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
      seconds[who] += elapsed;
      if (who == chosen_index) state.SetIterationTime(elapsed);
    }
    benchmark::DoNotOptimize(c.data());
    copy = (copy + 1) % copies;
    ++turn;
  }
  const double chosen = seconds[chosen_index];
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * static_cast<double>(s.m * s.n * s.k) * static_cast<double>(state.iterations()) / chosen / 1e9);
  state.counters["speedup_vs_eigen"] = seconds[0] / chosen;
  state.counters["speedup_vs_sgemm"] = seconds[1] / chosen;
  state.SetLabel(std::string(s.name) + (s.weights ? " prepacked" : " sgemm") + " eigen=" + nn::gemm_isa());
}

void gemm_arguments(benchmark::internal::Benchmark* b) {
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(std::size(shapes)); ++s) {
    for (const std::int64_t threads : {1, 2}) {
      b->Args({s, threads, shapes[s].weights ? 24 : 1});
      if (shapes[s].weights) b->Args({s, threads, 1});
    }
  }
}
BENCHMARK(BM_gemm_backends)->Apply(gemm_arguments)->ArgNames({"shape", "threads", "copies"})->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
