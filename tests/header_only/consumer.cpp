// A program that uses the memory module and the CPU sparse kernels with nothing but their
// include path: no inferopt library linked, no instruction-set flags (run_consumer.cmake
// compiles it). It checks what a consumer relies on:
//   - a caching pool over host memory, counted by a statistics adaptor, hands out aligned,
//     writable blocks and gives its segments back on release;
//   - the arena planner places the example of Pisarchyk & Lee (2020) in 124 bytes, with no
//     two live tensors overlapping;
//   - bsr_gemm runs every instruction-set build this CPU has (AVX2 and AVX-512 come from the
//     header's target attributes, so they must be available whenever the CPU has them) on
//     both weight orientations, with bias and ReLU, on 1 and 3 threads (3 only mean something
//     when compiled with OpenMP), with its workspace from the pool, and matches a naive
//     float64 product within the kernel's documented bound.
// Prints one line per check and returns non-zero on the first mismatch.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "inferopt/core/cpu_features.hpp"
#include "inferopt/memory.hpp"
#include "inferopt/sparse.hpp"

namespace {

namespace memory = inferopt::memory;
namespace sparse = inferopt::sparse;

bool check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  return ok;
}

bool pool_serves_aligned_blocks() {
  memory::host_resource host;
  memory::caching_pool pool(host);
  memory::statistics_adaptor counted(pool);
  std::vector<std::pair<void*, std::size_t>> live;
  for (std::size_t bytes : {std::size_t{100}, std::size_t{4096}, std::size_t{3} << 20, std::size_t{1000}}) {
    auto* p = static_cast<unsigned char*>(counted.allocate(bytes));
    if (reinterpret_cast<std::uintptr_t>(p) % memory::default_alignment != 0) return false;
    p[0] = 1;
    p[bytes - 1] = 2;
    live.emplace_back(p, bytes);
  }
  const bool counted_right = counted.statistics().current_allocations == 4 && pool.allocated_bytes() > 0;
  for (auto [p, n] : live) counted.deallocate(p, n);
  return counted_right && counted.statistics().current_bytes == 0 && pool.release() > 0 && pool.reserved_bytes() == 0;
}

bool planner_places_the_paper_example() {
  // id, size, first use, last use, no in-place hint
  const std::vector<memory::tensor_lifetime> tensors = {{0, 32, 0, 1, {}}, {1, 28, 1, 4, {}}, {2, 36, 2, 5, {}},
                                                        {3, 16, 3, 5, {}}, {4, 8, 4, 5, {}},  {5, 64, 5, 7, {}},
                                                        {6, 10, 6, 8, {}}, {7, 40, 7, 8, {}}};
  const memory::arena_plan plan = memory::plan_arena(tensors, 1);
  return plan.arena_bytes == 124 && memory::check_plan(tensors, plan, 1).empty();
}

// Y = act(X op(W) + bias) in float64 from the dense (pruned) W: k x n, or n x k when trans_w.
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias,
                              std::int64_t m, std::int64_t k, std::int64_t n, bool trans_w) {
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = bias[static_cast<std::size_t>(j)];
      for (std::int64_t p = 0; p < k; ++p) {
        const float wv = trans_w ? w[static_cast<std::size_t>(j * k + p)] : w[static_cast<std::size_t>(p * n + j)];
        sum += double{x[static_cast<std::size_t>(i * k + p)]} * wv;
      }
      y[static_cast<std::size_t>(i * n + j)] = sum > 0.0 ? sum : 0.0;
    }
  }
  return y;
}

// One product on one build and thread count, its workspace from `pool`.
bool gemm_matches(memory::memory_resource& pool, sparse::cpu_isa isa, int threads, bool trans_w) {
  constexpr std::int64_t m = 70, k = 96, n = 80;  // a partial panel and a partial last block
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  std::vector<float> x(static_cast<std::size_t>(m * k)), dense(static_cast<std::size_t>(k * n)), bias(n);
  for (float& v : x) v = value(rng);
  for (float& v : dense) v = value(rng);
  for (float& v : bias) v = value(rng);
  sparse::prune_options prune;
  prune.block = {8, 8};
  prune.sparsity = 0.5;
  const std::int64_t rows = trans_w ? n : k, cols = trans_w ? k : n;
  const sparse::bsr_matrix<float> w = sparse::prune_blocks<float>(dense, rows, cols, prune);
  const std::vector<double> want = reference(x, w.to_dense(), bias, m, k, n, trans_w);

  std::vector<float> y(static_cast<std::size_t>(m * n), NAN);
  sparse::bsr_gemm_args args;
  args.m = m;
  args.x = x.data();
  args.ldx = k;
  args.w = w.view();
  args.trans_w = trans_w;
  args.bias = bias.data();
  args.act = sparse::activation::relu;
  args.y = y.data();
  args.ldy = n;
  const sparse::cpu_context ctx{threads, isa};
  if (!sparse::can_implement(args, ctx)) return false;
  const std::size_t bytes = sparse::workspace_bytes(args, ctx);
  void* workspace = pool.allocate(bytes);
  sparse::run(args, std::span<std::byte>(static_cast<std::byte*>(workspace), bytes), ctx);
  pool.deallocate(workspace, bytes);
  // The kernel's bound: (k_s + 1) * 2^-24 * (sum |x w| + |bias|), with sum |x w| <= k here.
  const double bound = (k + 1) * std::ldexp(1.0, -24) * (k + 1);
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!(std::abs(y[i] - want[i]) <= bound)) return false;
  }
  return true;
}

bool every_build_runs() {
  const inferopt::cpu_features& cpu = inferopt::cpu_features_of_this_machine();
  bool ok = true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Compiled without -mavx2 or -mavx512f, the builds must still be there for a CPU that has them.
  ok &= check(sparse::is_available(sparse::cpu_isa::avx2) == cpu.has_avx2_fma(),
              "avx2 build available iff the cpu has it");
  ok &= check(sparse::is_available(sparse::cpu_isa::avx512) == cpu.has_avx512_skx(),
              "avx512 build available iff the cpu has it");
#else
  (void)cpu;
#endif
  memory::host_resource host;
  memory::caching_pool pool(host);
  for (const sparse::cpu_isa isa : {sparse::cpu_isa::portable, sparse::cpu_isa::avx2, sparse::cpu_isa::avx512}) {
    if (!sparse::is_available(isa)) {
      std::printf("skipped: bsr_gemm %s (not on this cpu)\n", sparse::to_string(isa));
      continue;
    }
    for (const int threads : {1, 3}) {
      for (const bool trans_w : {false, true}) {
        char what[96];
        std::snprintf(what, sizeof what, "bsr_gemm %s, %d thread(s), trans_w %d", sparse::to_string(isa), threads,
                      trans_w ? 1 : 0);
        ok &= check(gemm_matches(pool, isa, threads, trans_w), what);
      }
    }
  }
  return ok;
}

}  // namespace

int main() {
#ifdef _OPENMP
  std::printf("compiled with OpenMP\n");
#else
  std::printf("compiled without OpenMP: bsr_gemm runs on one thread\n");
#endif
  bool ok = check(pool_serves_aligned_blocks(), "caching pool over host memory");
  ok &= check(planner_places_the_paper_example(), "arena planner, paper example in 124 bytes");
  ok &= every_build_runs();
  std::printf("automatic runs %s\n", sparse::to_string(sparse::resolve(sparse::cpu_isa::automatic)));
  return ok ? 0 : 1;
}
