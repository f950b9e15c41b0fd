// CPU block-sparse GEMM (sparse::run) against Eigen's dense GEMM on the same product.
//
// Y = X W^T with X [m x k] and W [n x k] pruned to block sparsity by magnitude (l2 norm) from
// a random dense matrix. The baseline multiplies the same pruned W as a dense matrix. Shapes:
// 1024 x 1024 x 1024, and BERT-base's feed-forward layers at 128 tokens (768 -> 3072 and
// 3072 -> 768). Arguments: shape, sparsity in percent, square block size, threads.
//
// The candidate runs the build `automatic` picks (the label names it: avx512 on CPUs with
// AVX-512, else avx2). Baselines: Eigen compiled with -mavx2 -mfma (this file), and on CPUs
// with AVX-512, Eigen compiled for AVX-512 (dense_avx512.cpp). Each iteration times the
// candidate and each baseline once, rotating which goes first; the reported time is the
// candidate's, and each speedup is a baseline's time / the candidate's time summed over all
// iterations: `speedup_vs_dense` (AVX2), `speedup_vs_dense_avx512`, and
// `speedup_vs_best_dense` against whichever baseline was faster for this configuration. All
// run with the same thread count (OpenMP; Eigen through setNbThreads).
//
// BM_bsr_gemm_xw is the same for Y = X W with W [k x n] (an ONNX MatMul weight), which the
// kernel serves through a per-call block-column index.

#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "dense_baseline.hpp"
#include "inferopt/core/cpu_features.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"

namespace {

namespace sp = inferopt::sparse;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using clock_type = std::chrono::steady_clock;

struct shape {
  const char* name;
  std::int64_t m, k, n;
};
constexpr shape shapes[] = {
    {"1024^3", 1024, 1024, 1024},
    {"bert_ffn_up", 128, 768, 3072},
    {"bert_ffn_down", 128, 3072, 768},
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Dense Eigen GEMM in this file's instruction set: y = x w^T (trans_w) or y = x w.
void dense_avx2(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k, std::int64_t n,
                bool trans_w, int threads) {
  Eigen::setNbThreads(threads);
  const Eigen::Map<const row_major> xm(x, m, k);
  Eigen::Map<row_major> ym(y, m, n);
  if (trans_w) ym.noalias() = xm * Eigen::Map<const row_major>(w, n, k).transpose();
  else ym.noalias() = xm * Eigen::Map<const row_major>(w, k, n);
}

// Seconds summed over all iterations; the AVX-512 baseline's only when it ran.
struct timings {
  double candidate_s, dense_s, dense512_s;
  bool avx512;
};

// The speedups over each baseline, the baselines' times and the candidate's useful rate.
void report(benchmark::State& state, const shape& s, const sp::bsr_matrix<float>& w, std::int32_t block,
            const timings& t) {
  // Multiply-adds actually done: every stored weight (the shapes are whole blocks) once per row of X.
  const double useful_flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(w.nnz_blocks()) * block * block;
  state.counters["speedup_vs_dense"] = t.dense_s / t.candidate_s;
  if (t.avx512) state.counters["speedup_vs_dense_avx512"] = t.dense512_s / t.candidate_s;
  const double best_dense_s = t.avx512 ? std::min(t.dense_s, t.dense512_s) : t.dense_s;
  state.counters["speedup_vs_best_dense"] = best_dense_s / t.candidate_s;
  state.counters["dense_ms"] = 1e3 * t.dense_s / static_cast<double>(state.iterations());
  if (t.avx512) state.counters["dense_avx512_ms"] = 1e3 * t.dense512_s / static_cast<double>(state.iterations());
  state.counters["block_sparsity"] = w.block_sparsity();
  state.counters["GFLOPS"] = benchmark::Counter(useful_flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bsr_vs_dense(benchmark::State& state, bool trans_w) {
  const shape s = shapes[state.range(0)];
  const double sparsity = static_cast<double>(state.range(1)) / 100.0;
  const auto block = static_cast<std::int32_t>(state.range(2));
  const int threads = static_cast<int>(state.range(3));

  std::mt19937 rng(42);
  std::normal_distribution<float> value(0.0F, 1.0F);
  const std::int64_t w_rows = trans_w ? s.n : s.k;
  const std::int64_t w_cols = trans_w ? s.k : s.n;
  std::vector<float> dense(static_cast<std::size_t>(w_rows * w_cols));
  for (float& v : dense) v = value(rng);
  std::vector<float> x(static_cast<std::size_t>(s.m * s.k));
  for (float& v : x) v = value(rng);
  sp::prune_options options;
  options.block = {block, block};
  options.sparsity = sparsity;
  const auto w = sp::prune_blocks<float>(dense, w_rows, w_cols, options);
  const auto w_dense = w.to_dense();

  std::vector<float> y(static_cast<std::size_t>(s.m * s.n));
  std::vector<float> y_dense(y.size());
  sp::bsr_gemm_args args;
  args.m = s.m;
  args.x = x.data();
  args.ldx = s.k;
  args.w = w.view();
  args.trans_w = trans_w;
  args.y = y.data();
  args.ldy = s.n;
  const sp::cpu_context ctx{threads, sp::cpu_isa::automatic};
  if (const auto status = sp::can_implement(args, ctx); !status) {
    state.SkipWithError(status.reason.c_str());
    return;
  }
  std::vector<std::byte> workspace(sp::workspace_bytes(args, ctx));
  const bool avx512 = bench::dense_avx512_built() && inferopt::cpu_features_of_this_machine().has_avx512_skx();

  // Check once that candidate and baselines agree (also warms caches and thread pools).
  sp::run(args, workspace, ctx);
  auto check_baseline = [&](const char* name) {
    double worst = 0;
    double scale = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(y[i] - y_dense[i])));
      scale = std::max(scale, static_cast<double>(std::abs(y_dense[i])));
    }
    if (worst <= 1e-4 * (scale + 1.0)) return true;
    state.SkipWithError(("candidate and " + std::string(name) + " differ by " + std::to_string(worst)).c_str());
    return false;
  };
  dense_avx2(x.data(), w_dense.data(), y_dense.data(), s.m, s.k, s.n, trans_w, threads);
  if (!check_baseline("dense avx2")) return;
  if (avx512) {
    bench::dense_avx512(x.data(), w_dense.data(), y_dense.data(), s.m, s.k, s.n, trans_w, threads);
    if (!check_baseline("dense avx512")) return;
  }

  double candidate_s = 0;
  double dense_s = 0;
  double dense512_s = 0;
  auto timed = [](auto&& f, float* out) {
    const auto t0 = clock_type::now();
    f();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
    return seconds_since(t0);
  };
  int first = 0;  // which of the three runs first in this iteration
  for (auto _ : state) {
    double c = 0;
    for (int i = 0; i < 3; ++i) {
      switch ((first + i) % 3) {
        case 0: c = timed([&] { sp::run(args, workspace, ctx); }, y.data()); break;
        case 1:
          dense_s += timed(
              [&] { dense_avx2(x.data(), w_dense.data(), y_dense.data(), s.m, s.k, s.n, trans_w, threads); },
              y_dense.data());
          break;
        default:
          if (avx512) {
            dense512_s += timed(
                [&] { bench::dense_avx512(x.data(), w_dense.data(), y_dense.data(), s.m, s.k, s.n, trans_w, threads); },
                y_dense.data());
          }
          break;
      }
    }
    first = (first + 1) % 3;
    candidate_s += c;
    state.SetIterationTime(c);
  }
  state.SetLabel(std::string(s.name) + " " + sp::to_string(sp::resolve(ctx.isa)));
  report(state, s, w, block, {candidate_s, dense_s, dense512_s, avx512});
}

void BM_bsr_gemm(benchmark::State& state) { bsr_vs_dense(state, true); }
void BM_bsr_gemm_xw(benchmark::State& state) { bsr_vs_dense(state, false); }

// The acceptance grid: every shape x sparsity x block, on one thread and on two.
void grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "sparsity", "block", "threads"});
  for (std::int64_t threads : {1, 2}) {
    for (std::int64_t shape_id = 0; shape_id < 3; ++shape_id) {
      for (std::int64_t sparsity : {50, 75, 90}) {
        for (std::int64_t block : {4, 8, 16, 32}) b->Args({shape_id, sparsity, block, threads});
      }
    }
  }
}

void grid_xw(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "sparsity", "block", "threads"});
  for (std::int64_t shape_id = 0; shape_id < 3; ++shape_id) {
    for (std::int64_t block : {16, 32}) b->Args({shape_id, 75, block, 1});
  }
}

}  // namespace

BENCHMARK(BM_bsr_gemm)->Apply(grid)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_bsr_gemm_xw)->Apply(grid_xw)->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
