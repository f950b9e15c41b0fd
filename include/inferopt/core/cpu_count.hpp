#pragma once
/// How many CPUs this process may run on: the affinity mask's count where the OS has one
/// (a container or `taskset` limits it below the machine's), else the hardware's count.

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace inferopt {

/// At least 1.
[[nodiscard]] inline int usable_cpu_count() noexcept {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace inferopt
