#pragma once
// The OpenMP team size for one library call that sizes its team from the caller's nthreads
// ICV (oneDNN's OpenMP runtime does), put back when the call is done, exceptions included.
// Inside a parallel region it changes nothing: such a call runs on the one thread it has.
#include <omp.h>

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

}  // namespace inferopt::runtime::nn
