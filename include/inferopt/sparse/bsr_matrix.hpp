#pragma once
/// The block compressed sparse row (BSR) matrix: the storage of block-sparse weights.

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace inferopt::sparse {

/// The shape of one block: `rows` x `cols`, each in 1..64.
struct block_shape {
  std::int32_t rows = 16;
  std::int32_t cols = 16;

  static constexpr std::int32_t max_extent = 64;

  [[nodiscard]] std::int64_t size() const noexcept { return std::int64_t{rows} * cols; }
  friend bool operator==(block_shape, block_shape) = default;
};

/// A borrowed BSR matrix: the arrays of a `bsr_matrix` (or of anyone else, in the same
/// layout). The pointers may point to host or, for device kernels, device memory.
/// Layout: see `bsr_matrix`.
template <class T>
struct bsr_view {
  std::int64_t rows = 0;               ///< rows of the matrix (not of blocks)
  std::int64_t cols = 0;               ///< columns of the matrix
  block_shape block;                   ///< shape of every block
  std::int64_t nnz_blocks = 0;         ///< stored blocks
  const std::int32_t* row_ptr = nullptr;  ///< block_rows() + 1 entries
  const std::int32_t* col_ind = nullptr;  ///< nnz_blocks entries
  T* values = nullptr;                    ///< nnz_blocks * block.size() entries

  [[nodiscard]] std::int64_t block_rows() const noexcept { return (rows + block.rows - 1) / block.rows; }
  [[nodiscard]] std::int64_t block_cols() const noexcept { return (cols + block.cols - 1) / block.cols; }
};

/// A `rows` x `cols` matrix stored as r x c blocks in block compressed sparse row form.
///
/// Layout (the one the CPU kernels read without repacking):
/// - The matrix is cut into ceil(rows / r) block rows and ceil(cols / c) block columns. When a
///   dimension is not a multiple of the block, the last blocks stick out of the matrix; their
///   entries outside it are stored as zeros (the constructor checks).
/// - `row_ptr` (block rows + 1 entries) starts at 0 and never decreases; block row i owns the
///   stored blocks row_ptr[i] .. row_ptr[i + 1] - 1.
/// - `col_ind[b]` is the block column of stored block b; strictly increasing within a block
///   row (sorted, no duplicates).
/// - `values` holds the stored blocks one after another, r * c values each. Within a block the
///   values are **column-major**: entry (i, j) of block b is values[b * r * c + j * r + i].
///   Column-major blocks put the r outputs of one input contiguously for Y = X W^T, which is
///   what the kernel broadcasts from (see bsr_gemm.hpp).
///
/// Indices are 32-bit (as cuSPARSE's), so at most 2^31 - 1 blocks and block rows or columns.
/// T is float or double. A value type; not thread-safe to mutate. Header-only.
template <class T>
class bsr_matrix {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "bsr_matrix<T>: T is float or double");

 public:
  /// An empty 0 x 0 matrix with 1 x 1 blocks.
  bsr_matrix();

  /// Takes raw BSR arrays (layout above) after checking them.
  /// @throws inferopt::error(errc::invalid_argument) naming the problem: a block extent
  /// outside 1..64, negative dimensions, wrong array sizes, a row_ptr that does not start at
  /// 0, decreases or does not end at the number of blocks, column indices out of range or not
  /// strictly increasing within a block row, a nonzero value stored outside the matrix.
  bsr_matrix(std::int64_t rows, std::int64_t cols, block_shape block, std::vector<std::int32_t> row_ptr,
             std::vector<std::int32_t> col_ind, std::vector<T> values);

  /// Converts a dense row-major matrix without loss: stores every block that has a nonzero.
  /// Preconditions: dense.size() == rows * cols; a valid block shape.
  /// @throws inferopt::error(errc::invalid_argument).
  [[nodiscard]] static bsr_matrix from_dense(std::span<const T> dense, std::int64_t rows, std::int64_t cols,
                                             block_shape block);

  /// The dense row-major matrix (rows * cols values); blocks not stored are zeros.
  [[nodiscard]] std::vector<T> to_dense() const;
  /// Writes the dense matrix into `out` (row-major, row stride `ld` >= cols).
  /// Precondition: out holds (rows - 1) * ld + cols values. @throws inferopt::error.
  void to_dense(std::span<T> out, std::int64_t ld) const;

  /// The transpose: cols x rows with c x r blocks, the same blocks and values (a block's
  /// column-major values read as the row-major values of its transpose, so they are
  /// rearranged). O(stored values).
  [[nodiscard]] bsr_matrix transposed() const;

  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  [[nodiscard]] block_shape block() const noexcept { return block_; }
  [[nodiscard]] std::int64_t block_rows() const noexcept { return view().block_rows(); }
  [[nodiscard]] std::int64_t block_cols() const noexcept { return view().block_cols(); }
  [[nodiscard]] std::int64_t nnz_blocks() const noexcept { return static_cast<std::int64_t>(col_ind_.size()); }
  /// Fraction of the block grid that is not stored, in [0, 1] (0 for an empty grid).
  [[nodiscard]] double block_sparsity() const noexcept;

  [[nodiscard]] std::span<const std::int32_t> row_ptr() const noexcept { return row_ptr_; }
  [[nodiscard]] std::span<const std::int32_t> col_ind() const noexcept { return col_ind_; }
  [[nodiscard]] std::span<const T> values() const noexcept { return values_; }
  /// The r * c column-major values of stored block `b` (precondition: b < nnz_blocks()).
  [[nodiscard]] std::span<const T> block_values(std::int64_t b) const noexcept {
    return std::span<const T>(values_).subspan(static_cast<std::size_t>(b * block_.size()),
                                               static_cast<std::size_t>(block_.size()));
  }

  /// The arrays, borrowed; valid while this matrix lives and is not modified.
  [[nodiscard]] bsr_view<const T> view() const noexcept {
    return {rows_, cols_, block_, nnz_blocks(), row_ptr_.data(), col_ind_.data(), values_.data()};
  }

  friend bool operator==(const bsr_matrix&, const bsr_matrix&) = default;

 private:
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  block_shape block_{1, 1};
  std::vector<std::int32_t> row_ptr_;  // block_rows() + 1 entries, row_ptr_.back() == col_ind_.size()
  std::vector<std::int32_t> col_ind_;  // sorted and unique within each block row
  std::vector<T> values_;              // col_ind_.size() * block_.size(), zeros outside the matrix
};

/// Checks raw BSR arrays without copying them; the checks and messages of the constructor.
/// @throws inferopt::error(errc::invalid_argument) naming the first problem found.
template <class T>
void validate(const bsr_view<const T>& m);

}  // namespace inferopt::sparse

#include "inferopt/sparse/detail/bsr_matrix_impl.hpp"
