#pragma once
// The definitions of to_op_arrays and from_op_arrays. Included by block_sparse_matmul_op.hpp;
// include that instead.

#include <limits>
#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"

namespace inferopt::sparse::detail {

[[noreturn]] inline void bsr_arrays_error(const std::string& what) {
  throw error(errc::invalid_argument, "bsr arrays: " + what);
}

// The 32-bit copy of an index array; every entry must fit (range checks come later, in
// bsr_matrix's constructor, with its messages).
inline std::vector<std::int32_t> narrow_indices(std::span<const std::int64_t> in, const char* name) {
  std::vector<std::int32_t> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] < std::numeric_limits<std::int32_t>::min() || in[i] > std::numeric_limits<std::int32_t>::max()) {
      bsr_arrays_error(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(in[i]) +
                       " does not fit in 32 bits");
    }
    out[i] = static_cast<std::int32_t>(in[i]);
  }
  return out;
}

}  // namespace inferopt::sparse::detail

namespace inferopt::sparse {

inline bsr_op_arrays to_op_arrays(const bsr_matrix<float>& m) {
  bsr_op_arrays out;
  out.row_ptr.assign(m.row_ptr().begin(), m.row_ptr().end());
  out.col_ind.assign(m.col_ind().begin(), m.col_ind().end());
  const std::int64_t r = m.block().rows;
  const std::int64_t c = m.block().cols;
  out.values.resize(m.values().size());
  for (std::int64_t b = 0; b < m.nnz_blocks(); ++b) {
    const std::span<const float> block = m.block_values(b);
    float* dst = out.values.data() + b * r * c;
    for (std::int64_t i = 0; i < r; ++i) {
      for (std::int64_t j = 0; j < c; ++j) dst[i * c + j] = block[static_cast<std::size_t>(j * r + i)];
    }
  }
  return out;
}

inline bsr_matrix<float> from_op_arrays(std::int64_t rows, std::int64_t cols, block_shape block,
                                 std::span<const std::int64_t> row_ptr, std::span<const std::int64_t> col_ind,
                                 std::span<const float> values) {
  // The sizes are checked here because they decide how the arrays are read; everything about
  // their contents is bsr_matrix's to check.
  if (block.rows < 1 || block.rows > block_shape::max_extent || block.cols < 1 ||
      block.cols > block_shape::max_extent) {
    detail::bsr_arrays_error("block shape " + std::to_string(block.rows) + "x" + std::to_string(block.cols) +
                             " is outside 1..64");
  }
  if (rows < 0 || cols < 0) {
    detail::bsr_arrays_error("negative dimensions " + std::to_string(rows) + "x" + std::to_string(cols));
  }
  const std::int64_t block_rows = (rows + block.rows - 1) / block.rows;
  if (static_cast<std::int64_t>(row_ptr.size()) != block_rows + 1) {
    detail::bsr_arrays_error("row_ptr has " + std::to_string(row_ptr.size()) + " entries, expected " +
                             std::to_string(block_rows + 1) + " (block rows + 1)");
  }
  const std::int64_t nnz = static_cast<std::int64_t>(col_ind.size());
  if (nnz > std::numeric_limits<std::int32_t>::max()) {
    detail::bsr_arrays_error(std::to_string(nnz) + " blocks do not fit in 32 bits");
  }
  const std::int64_t r = block.rows;
  const std::int64_t c = block.cols;
  if (static_cast<std::int64_t>(values.size()) != nnz * r * c) {
    detail::bsr_arrays_error("values has " + std::to_string(values.size()) + " entries, expected " +
                             std::to_string(nnz * r * c) + " (" + std::to_string(nnz) + " blocks of " +
                             std::to_string(r) + "x" + std::to_string(c) + ")");
  }
  std::vector<float> column_major(values.size());
  for (std::int64_t b = 0; b < nnz; ++b) {
    const float* src = values.data() + b * r * c;
    float* dst = column_major.data() + b * r * c;
    for (std::int64_t i = 0; i < r; ++i) {
      for (std::int64_t j = 0; j < c; ++j) dst[j * r + i] = src[i * c + j];
    }
  }
  return bsr_matrix<float>(rows, cols, block, detail::narrow_indices(row_ptr, "row_ptr"),
                           detail::narrow_indices(col_ind, "col_ind"),
                           std::move(column_major));
}

}  // namespace inferopt::sparse
