// The memory module in four steps: a caching pool serving mixed sizes from a few 2 MiB
// segments; the static planner on the example of Pisarchyk & Lee (2020); the same planner
// on the default model's graph; and the executor placing intermediates by its plan.

#include <iostream>
#include <random>
#include <vector>

#include "inferopt/inferopt.hpp"
#include "inferopt/memory/arena_planner.hpp"
#include "inferopt/memory/caching_pool.hpp"
#include "inferopt/memory/host_resource.hpp"
#include "inferopt/memory/statistics_adaptor.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"

int main() {
  using namespace inferopt;
  try {
    // 1. A pool over host memory; the statistics adaptor counts what callers asked for.
    memory::host_resource host;
    memory::caching_pool pool(host);
    memory::statistics_adaptor counted(pool);
    std::mt19937 rng(1);
    std::vector<std::pair<void*, std::size_t>> live;
    for (int step = 0; step < 10000; ++step) {
      if (live.size() == 16) {  // free a random block, keep 16 live
        const std::size_t k = rng() % live.size();
        counted.deallocate(live[k].first, live[k].second);
        live[k] = live.back();
        live.pop_back();
      }
      const std::size_t bytes = std::size_t{64} << (rng() % 13);  // 64 B .. 256 KiB
      live.emplace_back(counted.allocate(bytes), bytes);
    }
    const memory::allocation_statistics stats = counted.statistics();
    std::cout << "pool: " << stats.total_allocations << " allocations, peak " << stats.peak_bytes / 1024
              << " KiB requested, " << pool.reserved_bytes() / 1024 << " KiB reserved in " << pool.segment_count()
              << " segments, fragmentation " << counted.fragmentation() << "\n";
    for (auto [p, n] : live) counted.deallocate(p, n);

    // 2. The paper's example: (first use, last use, size) per tensor.
    const std::vector<memory::tensor_lifetime> tensors = {{0, 32, 0, 1},  {1, 28, 1, 4}, {2, 36, 2, 5},
                                                          {3, 16, 3, 5},  {4, 8, 4, 5},  {5, 64, 5, 7},
                                                          {6, 10, 6, 8},  {7, 40, 7, 8}};
    const memory::arena_plan paper = memory::plan_arena(tensors, 1);
    std::cout << "planner, paper example: arena " << paper.arena_bytes << " bytes (lower bound "
              << paper.lower_bound_bytes << ", no reuse " << paper.naive_bytes << "), "
              << memory::check_plan(tensors, paper, 1).size() << " overlaps\n";

    // 3. The default model after -O1, planned from its inferred shapes.
    ir::model m = ir::make_default_model();
    pipeline prepare = parse_pipeline(level_pipeline(1, builtin_registry()).to_string() + ",infer-shapes", builtin_registry());
    pass_manager().run(prepare, m);
    const runtime::graph_memory_plan graph_plan = runtime::plan_graph_memory(m.graph());
    std::cout << "planner, default model: " << graph_plan.tensors.size() << " tensors, arena "
              << graph_plan.plan.arena_bytes << " bytes, lower bound " << graph_plan.plan.lower_bound_bytes
              << ", no reuse " << graph_plan.plan.naive_bytes << ", " << graph_plan.plan.in_place_count
              << " in place\n";

    // 4. The executor traces its first run, then places intermediates in one arena.
    runtime::session session(m, runtime::session_options{.threads = 1});
    const runtime::tensor_map feeds = runtime::random_inputs(session, 7);
    const auto first = session.run(feeds);
    const auto second = session.run(feeds);
    const runtime::memory_plan_info info = session.memory_plan();
    const auto name = session.outputs().front().name;
    std::cout << "executor: arena " << info.arena_bytes << " bytes for " << info.planned_tensors
              << " intermediates, plan active " << info.active << ", outputs equal "
              << (first.at(name).to_float() == second.at(name).to_float()) << "\n";
    return paper.arena_bytes == 124 && info.active ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
