#pragma once
// The definitions of bsr_matrix and validate. Included by bsr_matrix.hpp; include that instead.

#include <algorithm>
#include <limits>
#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"

namespace inferopt::sparse::detail {

[[noreturn]] inline void bsr_matrix_error(const std::string& what) {
  throw error(errc::invalid_argument, "bsr_matrix: " + what);
}

inline constexpr std::int64_t max_bsr_index = std::numeric_limits<std::int32_t>::max();

inline void check_shape(std::int64_t rows, std::int64_t cols, block_shape block) {
  if (block.rows < 1 || block.rows > block_shape::max_extent || block.cols < 1 ||
      block.cols > block_shape::max_extent) {
    bsr_matrix_error("block shape " + std::to_string(block.rows) + "x" + std::to_string(block.cols) +
                     " is outside 1..64");
  }
  if (rows < 0 || cols < 0) {
    bsr_matrix_error("negative dimensions " + std::to_string(rows) + "x" + std::to_string(cols));
  }
  const bsr_view<const float> v{rows, cols, block, 0, nullptr, nullptr, nullptr};
  if (v.block_rows() > max_bsr_index || v.block_cols() > max_bsr_index) {
    bsr_matrix_error(std::to_string(rows) + "x" + std::to_string(cols) +
                     " has more than 2^31 - 1 block rows or columns");
  }
}

}  // namespace inferopt::sparse::detail

namespace inferopt::sparse {

template <class T>
void validate(const bsr_view<const T>& m) {
  detail::check_shape(m.rows, m.cols, m.block);
  const std::int64_t block_rows = m.block_rows();
  const std::int64_t block_cols = m.block_cols();
  if (m.nnz_blocks < 0 || m.nnz_blocks > detail::max_bsr_index) {
    detail::bsr_matrix_error("nnz_blocks " + std::to_string(m.nnz_blocks) + " is out of range");
  }
  if (m.row_ptr == nullptr) detail::bsr_matrix_error("row_ptr is null");
  if (m.nnz_blocks > 0 && (m.col_ind == nullptr || m.values == nullptr)) {
    detail::bsr_matrix_error("col_ind or values is null");
  }
  if (m.row_ptr[0] != 0) detail::bsr_matrix_error("row_ptr[0] is " + std::to_string(m.row_ptr[0]) + ", expected 0");
  for (std::int64_t i = 0; i < block_rows; ++i) {
    if (m.row_ptr[i + 1] < m.row_ptr[i]) {
      detail::bsr_matrix_error("row_ptr decreases: row_ptr[" + std::to_string(i + 1) +
                               "] = " + std::to_string(m.row_ptr[i + 1]) + " < row_ptr[" + std::to_string(i) +
                               "] = " + std::to_string(m.row_ptr[i]));
    }
  }
  if (m.row_ptr[block_rows] != m.nnz_blocks) {
    detail::bsr_matrix_error("row_ptr ends at " + std::to_string(m.row_ptr[block_rows]) +
                             ", expected the number of blocks " + std::to_string(m.nnz_blocks));
  }
  for (std::int64_t i = 0; i < block_rows; ++i) {
    for (std::int64_t b = m.row_ptr[i]; b < m.row_ptr[i + 1]; ++b) {
      const std::int32_t j = m.col_ind[b];
      if (j < 0 || j >= block_cols) {
        detail::bsr_matrix_error("col_ind[" + std::to_string(b) + "] = " + std::to_string(j) + " is out of range [0, " +
             std::to_string(block_cols) + ")");
      }
      if (b > m.row_ptr[i] && j <= m.col_ind[b - 1]) {
        detail::bsr_matrix_error("block row " + std::to_string(i) +
                                 ": column indices are not strictly increasing (col_ind[" + std::to_string(b) +
                                 "] = " + std::to_string(j) + " after " + std::to_string(m.col_ind[b - 1]) + ")");
      }
    }
  }
  // Entries of edge blocks outside the matrix must be zero: the kernels multiply them with
  // zero padding, and a NaN or infinity there would leak into the result.
  const std::int64_t r = m.block.rows;
  const std::int64_t c = m.block.cols;
  const std::int64_t rows_in_last = m.rows - (block_rows - 1) * r;
  const std::int64_t cols_in_last = m.cols - (block_cols - 1) * c;
  for (std::int64_t i = 0; i < block_rows; ++i) {
    for (std::int64_t b = m.row_ptr[i]; b < m.row_ptr[i + 1]; ++b) {
      const std::int64_t row_limit = i == block_rows - 1 ? rows_in_last : r;
      const std::int64_t col_limit = m.col_ind[b] == block_cols - 1 ? cols_in_last : c;
      if (row_limit == r && col_limit == c) continue;
      const T* v = m.values + b * r * c;
      for (std::int64_t jj = 0; jj < c; ++jj) {
        for (std::int64_t ii = 0; ii < r; ++ii) {
          if ((ii >= row_limit || jj >= col_limit) && v[jj * r + ii] != T(0)) {
            detail::bsr_matrix_error("block " + std::to_string(b) + " (block row " + std::to_string(i) +
                                     ", block column " + std::to_string(m.col_ind[b]) +
                                     ") holds a nonzero outside the " + std::to_string(m.rows) + "x" +
                                     std::to_string(m.cols) + " matrix");
          }
        }
      }
    }
  }
}

template <class T>
bsr_matrix<T>::bsr_matrix() : row_ptr_{0} {}

template <class T>
bsr_matrix<T>::bsr_matrix(std::int64_t rows, std::int64_t cols, block_shape block, std::vector<std::int32_t> row_ptr,
                          std::vector<std::int32_t> col_ind, std::vector<T> values)
    : rows_(rows), cols_(cols), block_(block), row_ptr_(std::move(row_ptr)), col_ind_(std::move(col_ind)),
      values_(std::move(values)) {
  detail::check_shape(rows_, cols_, block_);
  const auto block_rows = static_cast<std::size_t>(view().block_rows());
  if (row_ptr_.size() != block_rows + 1) {
    detail::bsr_matrix_error("row_ptr has " + std::to_string(row_ptr_.size()) + " entries, expected block rows + 1 = " +
         std::to_string(block_rows + 1));
  }
  if (values_.size() != col_ind_.size() * static_cast<std::size_t>(block_.size())) {
    detail::bsr_matrix_error("values has " + std::to_string(values_.size()) + " entries, expected " +
                             std::to_string(col_ind_.size()) + " blocks of " + std::to_string(block_.size()) + " = " +
                             std::to_string(col_ind_.size() * static_cast<std::size_t>(block_.size())));
  }
  validate<T>(view());
}

template <class T>
bsr_matrix<T> bsr_matrix<T>::from_dense(std::span<const T> dense, std::int64_t rows, std::int64_t cols,
                                        block_shape block) {
  detail::check_shape(rows, cols, block);
  expects(static_cast<std::int64_t>(dense.size()) == rows * cols, "dense.size() must be rows * cols");
  const std::int64_t r = block.rows;
  const std::int64_t c = block.cols;
  const bsr_view<const T> shape{rows, cols, block, 0, nullptr, nullptr, nullptr};
  std::vector<std::int32_t> row_ptr{0};
  std::vector<std::int32_t> col_ind;
  std::vector<T> values;
  for (std::int64_t bi = 0; bi < shape.block_rows(); ++bi) {
    const std::int64_t i0 = bi * r;
    const std::int64_t i1 = std::min(rows, i0 + r);
    for (std::int64_t bj = 0; bj < shape.block_cols(); ++bj) {
      const std::int64_t j0 = bj * c;
      const std::int64_t j1 = std::min(cols, j0 + c);
      bool nonzero = false;
      for (std::int64_t i = i0; i < i1 && !nonzero; ++i) {
        for (std::int64_t j = j0; j < j1; ++j) {
          nonzero = nonzero || dense[static_cast<std::size_t>(i * cols + j)] != T(0);
        }
      }
      if (!nonzero) continue;
      col_ind.push_back(static_cast<std::int32_t>(bj));
      const std::size_t base = values.size();
      values.resize(base + static_cast<std::size_t>(r * c), T(0));
      for (std::int64_t j = j0; j < j1; ++j) {
        for (std::int64_t i = i0; i < i1; ++i) {
          values[base + static_cast<std::size_t>((j - j0) * r + (i - i0))] =
              dense[static_cast<std::size_t>(i * cols + j)];
        }
      }
    }
    expects(col_ind.size() <= static_cast<std::size_t>(detail::max_bsr_index), "more than 2^31 - 1 blocks");
    row_ptr.push_back(static_cast<std::int32_t>(col_ind.size()));
  }
  return bsr_matrix(rows, cols, block, std::move(row_ptr), std::move(col_ind), std::move(values));
}

template <class T>
std::vector<T> bsr_matrix<T>::to_dense() const {
  std::vector<T> out(static_cast<std::size_t>(rows_ * cols_), T(0));
  to_dense(out, cols_);
  return out;
}

template <class T>
void bsr_matrix<T>::to_dense(std::span<T> out, std::int64_t ld) const {
  expects(ld >= cols_, "ld must be at least cols");
  if (rows_ == 0 || cols_ == 0) return;
  expects(static_cast<std::int64_t>(out.size()) >= (rows_ - 1) * ld + cols_, "out is too small for rows x ld");
  for (std::int64_t i = 0; i < rows_; ++i) std::fill_n(out.begin() + i * ld, cols_, T(0));
  const std::int64_t r = block_.rows;
  const std::int64_t c = block_.cols;
  for (std::int64_t bi = 0; bi < block_rows(); ++bi) {
    const std::int64_t i1 = std::min(rows_, bi * r + r);
    for (std::int64_t b = row_ptr_[bi]; b < row_ptr_[bi + 1]; ++b) {
      const std::int64_t j0 = std::int64_t{col_ind_[b]} * c;
      const std::int64_t j1 = std::min(cols_, j0 + c);
      const T* v = values_.data() + b * r * c;
      for (std::int64_t i = bi * r; i < i1; ++i) {
        for (std::int64_t j = j0; j < j1; ++j) {
          out[static_cast<std::size_t>(i * ld + j)] = v[(j - j0) * r + (i - bi * r)];
        }
      }
    }
  }
}

template <class T>
bsr_matrix<T> bsr_matrix<T>::transposed() const {
  const std::int64_t r = block_.rows;
  const std::int64_t c = block_.cols;
  const std::int64_t block_rows_t = block_cols();
  // Counting sort of the blocks by block column: the block rows of the transpose, each
  // filled in increasing original block row, so its column indices come out sorted.
  std::vector<std::int32_t> row_ptr(static_cast<std::size_t>(block_rows_t + 1), 0);
  for (std::int32_t j : col_ind_) ++row_ptr[static_cast<std::size_t>(j) + 1];
  for (std::size_t i = 1; i < row_ptr.size(); ++i) row_ptr[i] += row_ptr[i - 1];
  std::vector<std::int32_t> next(row_ptr.begin(), row_ptr.end() - 1);
  std::vector<std::int32_t> col_ind(col_ind_.size());
  std::vector<T> values(values_.size());
  for (std::int64_t bi = 0; bi < block_rows(); ++bi) {
    for (std::int64_t b = row_ptr_[bi]; b < row_ptr_[bi + 1]; ++b) {
      const std::int32_t to = next[static_cast<std::size_t>(col_ind_[b])]++;
      col_ind[static_cast<std::size_t>(to)] = static_cast<std::int32_t>(bi);
      // Entry (i, j) of the block, at j * r + i, becomes entry (j, i) of a c x r block, at i * c + j.
      const T* from = values_.data() + b * r * c;
      T* dst = values.data() + std::int64_t{to} * r * c;
      for (std::int64_t j = 0; j < c; ++j) {
        for (std::int64_t i = 0; i < r; ++i) dst[i * c + j] = from[j * r + i];
      }
    }
  }
  return bsr_matrix(cols_, rows_, block_shape{block_.cols, block_.rows}, std::move(row_ptr), std::move(col_ind),
                    std::move(values));
}

template <class T>
double bsr_matrix<T>::block_sparsity() const noexcept {
  const double grid = static_cast<double>(block_rows()) * static_cast<double>(block_cols());
  return grid == 0 ? 0.0 : 1.0 - static_cast<double>(nnz_blocks()) / grid;
}

}  // namespace inferopt::sparse
