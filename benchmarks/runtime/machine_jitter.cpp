// The machine's own latency spread, the control for `inferopt bench`'s P99 / P50: the same
// fixed work timed again and again, with no executor involved. Two kinds of work, one after
// the other: a chain of multiply-adds (the cores alone) and sums over a buffer larger than
// the L2 caches (the memory system too). On a quiet machine both read close to 1; where the
// memory loop reads 1.5 or more, a model's P99 there says as much about the machine.
//
//   machine_jitter [REPS] [MIB]    (defaults 400 and 24; pin it as the runs it explains)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

/// Times `work` `reps` times after 10 untimed runs and prints the spread.
void report(const char* what, int reps, const std::function<void()>& work) {
  for (int r = 0; r < 10; ++r) work();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))]; };
  const double p50 = at(0.5);
  const auto slow = std::count_if(ms.begin(), ms.end(), [&](double t) { return t > 1.5 * p50; });
  std::printf("%-8s min %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f ms   p99/p50 %.2f   runs over 1.5x p50: %ld\n", what,
              ms.front(), p50, at(0.9), at(0.99), ms.back(), at(0.99) / p50, static_cast<long>(slow));
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 400;
  const long mib = argc > 2 ? std::max(1L, std::atol(argv[2])) : 24;
  volatile double step = 1e-9;  // read every iteration, so the chain is not folded away
  volatile double chain_sink = 0;
  report("compute", reps, [&] {
    double a = 1.0;
    for (long i = 0; i < 1'500'000; ++i) a = a * 0.999999999 + step;
    chain_sink = chain_sink + a;
  });
  std::vector<float> buffer(static_cast<std::size_t>(mib) << 18, 1.0f);
  volatile float memory_sink = 0;
  report("memory", reps, [&] {
    float sum = 0;
    for (int pass = 0; pass < 3; ++pass) {
      for (std::size_t i = 0; i + 3 < buffer.size(); i += 4) sum += buffer[i] + buffer[i + 1] * buffer[i + 2] - buffer[i + 3];
    }
    memory_sink = memory_sink + sum;
  });
}
