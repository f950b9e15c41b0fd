#pragma once
// The allocation pattern both pool benchmarks replay: a seeded sequence of log-uniform sizes,
// with a window of live blocks; each step frees the oldest block and allocates the next, the
// pattern of an executor's temporaries.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

namespace inferopt::bench {

/// `count` sizes, log-uniform in [lo, hi], the same for every run of the program.
inline std::vector<std::size_t> log_uniform_sizes(std::size_t count, double lo, double hi, unsigned seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(lo), std::log(hi));
  std::vector<std::size_t> out(count);
  for (auto& n : out) n = static_cast<std::size_t>(std::exp(log_size(rng)));
  return out;
}

/// What a benchmark allocates through.
struct allocator {
  virtual ~allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) = 0;
  /// Called after each allocation: host allocators touch the block, so that lazily mapped
  /// pages cost every candidate the same.
  virtual void touch(void*) {}
  /// Called once after the replay (device allocators wait for their stream).
  virtual void finish() {}
};

/// Replays `sizes` with `window` live blocks; returns the seconds it took.
inline double replay(allocator& a, const std::vector<std::size_t>& sizes, std::size_t window) {
  std::vector<std::pair<void*, std::size_t>> live(window, {nullptr, 0});
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto& slot = live[i % window];
    if (slot.first != nullptr) a.deallocate(slot.first, slot.second);
    slot = {a.allocate(sizes[i]), sizes[i]};
    a.touch(slot.first);
  }
  for (auto& [p, n] : live) {
    if (p != nullptr) a.deallocate(p, n);
  }
  a.finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace inferopt::bench
