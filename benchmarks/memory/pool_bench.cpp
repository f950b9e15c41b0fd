// caching_pool against glibc malloc and the std::pmr pools.
//
// Every allocator replays the same seeded sequence of sizes (log-uniform, 64 B to 1 MiB),
// keeping a window of 32 live blocks: each step allocates one block and frees the oldest, the
// pattern of an executor's temporaries. Each iteration replays one batch on the candidate and
// the same batch on malloc, alternating so that clock drift hits both; the reported time is
// the candidate's and `speedup_vs_malloc` is malloc time / candidate time.
//
// glibc malloc with its defaults maps blocks over its (adaptive) mmap threshold and gives
// memory back when its heap top grows past the trim threshold, so it pays page faults again
// and again; that is what programs get unless they tune it. The last benchmark tunes it
// (mallopt: no mmap below 32 MiB, never trim), the strongest malloc there is for this
// pattern, and compares the pool against that. It runs last because mallopt is global.

#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstdlib>
#include <limits>
#include <memory>
#include <memory_resource>
#include <vector>

#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "replay.hpp"

namespace {

using inferopt::bench::allocator;

constexpr std::size_t window = 32;

const std::vector<std::size_t>& sizes() {
  static const std::vector<std::size_t> s = inferopt::bench::log_uniform_sizes(4096, 64.0, 1024.0 * 1024.0);
  return s;
}

// Touches each block once so that lazily mapped pages cost every candidate the same.
struct host_allocator : allocator {
  void touch(void* p) override {
    static_cast<char*>(p)[0] = 1;
    benchmark::DoNotOptimize(p);
  }
};

struct malloc_allocator final : host_allocator {
  void* allocate(std::size_t bytes) override { return std::malloc(bytes); }
  void deallocate(void* p, std::size_t) override { std::free(p); }
};

struct pool_allocator final : host_allocator {
  inferopt::memory::host_resource host;
  inferopt::memory::caching_pool pool{host};
  void* allocate(std::size_t bytes) override { return pool.allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) override { pool.deallocate(p, bytes); }
};

template <class Pmr>
struct pmr_allocator final : host_allocator {
  Pmr resource;
  void* allocate(std::size_t bytes) override { return resource.allocate(bytes, 64); }
  void deallocate(void* p, std::size_t bytes) override { resource.deallocate(p, bytes, 64); }
};

double replay(allocator& a) { return inferopt::bench::replay(a, sizes(), window); }

template <class Candidate>
void BM_alloc_free(benchmark::State& state) {
  Candidate candidate;
  malloc_allocator baseline;
  replay(candidate);  // warm: the pool's segments, the pmr pools' chunks
  replay(baseline);
  double candidate_s = 0;
  double baseline_s = 0;
  for (auto _ : state) {
    const double c = replay(candidate);
    const double b = replay(baseline);
    candidate_s += c;
    baseline_s += b;
    state.SetIterationTime(c);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes().size()));
  state.counters["speedup_vs_malloc"] = baseline_s / candidate_s;
}

// The pool against malloc tuned never to map or trim (see the note at the top).
void BM_alloc_free_tuned_malloc(benchmark::State& state) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  BM_alloc_free<pool_allocator>(state);
}

}  // namespace

BENCHMARK_TEMPLATE(BM_alloc_free, malloc_allocator)->Name("BM_alloc_free/malloc")->UseManualTime();
BENCHMARK_TEMPLATE(BM_alloc_free, pool_allocator)->Name("BM_alloc_free/caching_pool")->UseManualTime();
BENCHMARK_TEMPLATE(BM_alloc_free, pmr_allocator<std::pmr::synchronized_pool_resource>)
    ->Name("BM_alloc_free/pmr_synchronized_pool")
    ->UseManualTime();
BENCHMARK_TEMPLATE(BM_alloc_free, pmr_allocator<std::pmr::unsynchronized_pool_resource>)
    ->Name("BM_alloc_free/pmr_unsynchronized_pool")
    ->UseManualTime();

BENCHMARK(BM_alloc_free_tuned_malloc)->Name("BM_alloc_free/caching_pool_vs_tuned_malloc")->UseManualTime();

BENCHMARK_MAIN();
