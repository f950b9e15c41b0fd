#pragma once
/// The predicted speedup of the CPU block-sparse GEMM over a dense GEMM, for reports such as
/// `sparsify-blocks`'s dry run. A model fitted to one measured run, not a measurement.

#include <string_view>

namespace inferopt::sparse {

/// The dense GEMM a prediction compares against: the instruction set it was built for.
enum class dense_baseline {
  avx2,    ///< Eigen with AVX2 + FMA: the same instruction set as our kernel
  avx512,  ///< Eigen with AVX-512: our kernel runs its AVX-512 build on the same CPU
};

/// "avx512" gives `avx512`; anything else ("avx2", "generic") gives `avx2`, the
/// same-instruction-set comparison (no run measured the portable builds against each other).
[[nodiscard]] inline dense_baseline dense_baseline_from(std::string_view isa) noexcept;

/// Dense time over block-sparse time for a weight with this block sparsity (the fraction of
/// the block grid not stored, in [0, 1]).
///
/// Model: the sparse kernel's time is proportional to the blocks it keeps, so
///   speedup(s) = e(s) / (1 - s),
/// where the efficiency e(s) is the measured speedup times (1 - s), averaged over the shapes
/// and block sizes (4, 8, 16, 32) of single-thread runs in docs/BENCHMARKS.md ("Sparse: CPU
/// block-sparse GEMM": 1024^3 and BERT-base FFN shapes at 128 tokens). Against `avx2`, the
/// kernel's AVX2 build (the run before the AVX-512 build existed): e = 0.81 at 50%, 0.76 at
/// 75%, 0.59 at 90%. Against `avx512`, the kernel's AVX-512 build: e = 0.83, 0.69, 0.51.
/// Between those points e is interpolated linearly; below 50% and above 90% it is held at the
/// nearest measured value (below 50% the fixed costs, packing X and writing Y, weigh more than
/// the model says, so the prediction is optimistic there). The measured points scattered by
/// about +-15% (up to +-30% at 90%) around these means across shapes and block sizes.
///
/// Returns +infinity when s >= 1 (nothing is multiplied). Out-of-range s is clamped to [0, 1].
[[nodiscard]] inline double predicted_speedup(double block_sparsity, dense_baseline baseline) noexcept;

}  // namespace inferopt::sparse

#include "inferopt/sparse/detail/speedup_model_impl.hpp"
