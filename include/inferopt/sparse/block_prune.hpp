#pragma once
/// Magnitude block pruning: a dense matrix to a `bsr_matrix` that keeps its largest blocks.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "inferopt/sparse/bsr_matrix.hpp"

namespace inferopt::sparse {

/// How a block's magnitude is measured.
enum class block_norm {
  l1,  ///< sum of |w|
  l2,  ///< sqrt of the sum of w^2
};

/// What `prune_blocks` keeps. Give exactly one of `sparsity` and `threshold`.
struct prune_options {
  block_shape block;                  ///< default 16 x 16
  block_norm norm = block_norm::l2;
  /// Fraction of the block grid to remove, in [0, 1]: the round(sparsity * blocks) blocks of
  /// smallest norm go (with `equal_blocks_per_row`: see there).
  std::optional<double> sparsity;
  /// Remove every block whose norm is below this (>= 0).
  std::optional<double> threshold;
  /// Keep the same number of blocks, k, in every block row (the largest of each row), which
  /// balances the rows across threads and suits ELL-style device kernels. With `sparsity`,
  /// k = round((1 - sparsity) * block columns); with `threshold`, k = round(blocks at or
  /// above the threshold / block rows). The achieved sparsity is then 1 - k / block columns.
  bool equal_blocks_per_row = false;
};

/// The norm of every block of a dense row-major matrix, block-row-major (block (i, j) at
/// i * block_cols + j). Blocks that stick out of the matrix count only their entries inside.
/// Norms are accumulated in double. Preconditions: dense.size() == rows * cols; a valid
/// block shape. @throws inferopt::error(errc::invalid_argument).
template <class T>
[[nodiscard]] std::vector<double> block_norms(std::span<const T> dense, std::int64_t rows, std::int64_t cols,
                                              block_shape block, block_norm norm);

/// Prunes a dense row-major matrix to block sparsity by magnitude and stores what is kept.
///
/// Blocks are ranked by norm, largest first; ties keep the block that comes first in
/// block-row-major order, so the result is deterministic. Exactly the counted number of
/// blocks is kept, even when some of them are all zeros (so that a target sparsity is met
/// exactly and equal rows stay equal). Kept blocks keep their values unchanged.
///
/// Preconditions: dense.size() == rows * cols; a valid block shape; exactly one of
/// sparsity (in [0, 1]) and threshold (finite, >= 0). @throws inferopt::error(errc::invalid_argument).
template <class T>
[[nodiscard]] bsr_matrix<T> prune_blocks(std::span<const T> dense, std::int64_t rows, std::int64_t cols,
                                         const prune_options& options);

}  // namespace inferopt::sparse

#include "inferopt/sparse/detail/block_prune_impl.hpp"
