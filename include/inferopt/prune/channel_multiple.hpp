#pragma once
/// The channel multiple that pruned layers should keep so that the CPU runtimes waste nothing.

#include <cstdint>

namespace inferopt::prune {

/// What kept channel counts should be multiples of on this machine: 16 where the executor's
/// dense kernels run AVX-512, else 8. Both CPU runtimes a pruned model targets hold a
/// convolution's channels in blocks of that width (the executor's blocked layout, oneDNN's
/// nChw16c / nChw8c; onnxruntime's MLAS NCHWc kernels), so a count between two multiples
/// costs as much as the next one: light ResNet-50 pruned 30% to multiples of 16 keeps 3.5%
/// more MACs than to multiples of 8 and runs no slower in either (docs/BENCHMARKS.md).
/// Transformer widths (GEMM columns) barely care, so the same rule serves them. INFEROPT_NN_ISA
/// caps the ISA, which is how to prune here for an AVX2 machine.
[[nodiscard]] std::int64_t preferred_channel_multiple() noexcept;

}  // namespace inferopt::prune
