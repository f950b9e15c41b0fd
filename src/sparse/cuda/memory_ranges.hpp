#pragma once
// Whether an output matrix overlaps an input: the sparse kernel and the cuBLAS path both refuse
// such calls (the kernels write Y while other thread blocks still read X and the bias).

#include <cstddef>
#include <cstdint>
#include <functional>

namespace inferopt::sparse::cuda::detail {

// Whether the bytes of an m x cols matrix with row stride ld (elements of `elem` bytes) at `a`
// and the `b_bytes` bytes at `b` overlap.
inline bool overlaps(const void* a, std::int64_t rows, std::int64_t ld, std::int64_t cols, std::size_t elem,
                     const void* b, std::int64_t b_bytes) noexcept {
  if (a == nullptr || b == nullptr || rows <= 0 || cols <= 0 || b_bytes <= 0) return false;
  const auto* a0 = static_cast<const char*>(a);
  const auto* a1 = a0 + ((rows - 1) * ld + cols) * static_cast<std::int64_t>(elem);
  const auto* b0 = static_cast<const char*>(b);
  const auto* b1 = b0 + b_bytes;
  return std::less<>{}(a0, b1) && std::less<>{}(b0, a1);
}

}  // namespace inferopt::sparse::cuda::detail
