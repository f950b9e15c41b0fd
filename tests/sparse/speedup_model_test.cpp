// The speedup model behind `sparsify-blocks --dry-run`: e(s) / (1 - s) with e fitted to the
// documented benchmark run.

#include "inferopt/sparse/speedup_model.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace inferopt;
using sparse::dense_baseline;
using sparse::predicted_speedup;

TEST_CASE("predicted speedups reproduce the fitted efficiencies at the measured sparsities", "[sparse][speedup_model]") {
  // The means of docs/BENCHMARKS.md's single-thread tables, divided by 1 / (1 - s).
  CHECK(predicted_speedup(0.5, dense_baseline::avx2) == Approx(0.813 / 0.5));
  CHECK(predicted_speedup(0.75, dense_baseline::avx2) == Approx(0.757 / 0.25));
  CHECK(predicted_speedup(0.9, dense_baseline::avx2) == Approx(0.594 / 0.1));
  CHECK(predicted_speedup(0.5, dense_baseline::avx512) == Approx(0.827 / 0.5));
  CHECK(predicted_speedup(0.75, dense_baseline::avx512) == Approx(0.693 / 0.25));
  CHECK(predicted_speedup(0.9, dense_baseline::avx512) == Approx(0.508 / 0.1));
}

TEST_CASE("predicted speedups grow with sparsity against either baseline", "[sparse][speedup_model]") {
  // Not ordered between the baselines: each is the kernel's build of the same instruction set.
  for (const dense_baseline baseline : {dense_baseline::avx2, dense_baseline::avx512}) {
    double previous = 0.0;
    for (int i = 0; i < 100; ++i) {
      const double s = i / 100.0;
      CAPTURE(s, static_cast<int>(baseline));
      const double speedup = predicted_speedup(s, baseline);
      CHECK(speedup > previous);
      previous = speedup;
    }
  }
}

TEST_CASE("predicted speedups hold e outside the measured range and are infinite with no blocks", "[sparse][speedup_model]") {
  CHECK(predicted_speedup(0.0, dense_baseline::avx2) == Approx(0.813));
  CHECK(predicted_speedup(0.25, dense_baseline::avx2) == Approx(0.813 / 0.75));
  CHECK(predicted_speedup(0.95, dense_baseline::avx2) == Approx(0.594 / 0.05));
  CHECK(std::isinf(predicted_speedup(1.0, dense_baseline::avx2)));
  CHECK(predicted_speedup(-1.0, dense_baseline::avx2) == predicted_speedup(0.0, dense_baseline::avx2));
  CHECK(predicted_speedup(std::nan(""), dense_baseline::avx2) == predicted_speedup(0.0, dense_baseline::avx2));
}

TEST_CASE("the dense baseline follows the executor's instruction set", "[sparse][speedup_model]") {
  CHECK(sparse::dense_baseline_from("avx512") == dense_baseline::avx512);
  CHECK(sparse::dense_baseline_from("avx2") == dense_baseline::avx2);
  CHECK(sparse::dense_baseline_from("generic") == dense_baseline::avx2);
}
