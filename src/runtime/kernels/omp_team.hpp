#pragma once
// The OpenMP team size for one library call that sizes its team from the caller's nthreads
// ICV (oneDNN's OpenMP runtime does), put back when the call is done, exceptions included.
// Inside a parallel region it changes nothing: such a call runs on the one thread it has.
#include <omp.h>

#include <cstdint>

namespace inferopt::runtime::nn {

class omp_team_for_call {
 public:
  explicit omp_team_for_call(int threads) noexcept : previous_(omp_get_max_threads()), nested_(omp_in_parallel() != 0) {
    if (!nested_) omp_set_num_threads(threads > 0 ? threads : 1);
  }
  ~omp_team_for_call() {
    if (!nested_) omp_set_num_threads(previous_);
  }
  omp_team_for_call(const omp_team_for_call&) = delete;
  omp_team_for_call& operator=(const omp_team_for_call&) = delete;

 private:
  int previous_;
  bool nested_;
};

/// The threads worth giving a call of `work` multiply-adds (or element visits): all of them,
/// or one when the work is so small that starting and joining a team costs more than
/// splitting it saves. On the 2-core VM a team costs about 1-2 us a call, and the corpus's
/// sub-millisecond models (dozens of convs of 10^4-10^5 multiply-adds) ran up to 2x slower
/// on 2 threads than on 1; serial below 2^16, 2^18 or 2^20 all made them faster at 2 threads
/// than onnxruntime (docs/BENCHMARKS.md), so the middle one stands.
[[nodiscard]] constexpr int worthwhile_threads(std::int64_t work, int threads) noexcept {
  constexpr std::int64_t serial_below = std::int64_t{1} << 18;
  return work < serial_below ? 1 : threads;
}

}  // namespace inferopt::runtime::nn
