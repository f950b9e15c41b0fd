#pragma once
// The definitions of block_norms and prune_blocks. Included by block_prune.hpp; include that
// instead.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/block_prune.hpp"

namespace inferopt::sparse::detail {

// Larger norm first; among equal norms the earlier block.
struct ranks_before {
  const std::vector<double>* norms;
  bool operator()(std::int64_t a, std::int64_t b) const {
    const double na = (*norms)[static_cast<std::size_t>(a)];
    const double nb = (*norms)[static_cast<std::size_t>(b)];
    return na != nb ? na > nb : a < b;
  }
};

// Marks the `count` best-ranked of `candidates` as kept.
inline void keep_best(std::vector<std::int64_t>& candidates, std::int64_t count, const std::vector<double>& norms,
               std::vector<bool>& keep) {
  count = std::clamp<std::int64_t>(count, 0, static_cast<std::int64_t>(candidates.size()));
  std::nth_element(candidates.begin(), candidates.begin() + count, candidates.end(), ranks_before{&norms});
  for (std::int64_t i = 0; i < count; ++i) {
    keep[static_cast<std::size_t>(candidates[static_cast<std::size_t>(i)])] = true;
  }
}

}  // namespace inferopt::sparse::detail

namespace inferopt::sparse {

template <class T>
std::vector<double> block_norms(std::span<const T> dense, std::int64_t rows, std::int64_t cols, block_shape block,
                                block_norm norm) {
  expects(block.rows >= 1 && block.rows <= block_shape::max_extent && block.cols >= 1 &&
              block.cols <= block_shape::max_extent,
          "block extents must be in 1..64");
  expects(rows >= 0 && cols >= 0 && static_cast<std::int64_t>(dense.size()) == rows * cols,
          "dense.size() must be rows * cols");
  const std::int64_t block_rows = (rows + block.rows - 1) / block.rows;
  const std::int64_t block_cols = (cols + block.cols - 1) / block.cols;
  std::vector<double> out(static_cast<std::size_t>(block_rows * block_cols), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    double* row = out.data() + (i / block.rows) * block_cols;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double v = static_cast<double>(dense[static_cast<std::size_t>(i * cols + j)]);
      row[j / block.cols] += norm == block_norm::l1 ? std::abs(v) : v * v;
    }
  }
  if (norm == block_norm::l2) {
    for (double& v : out) v = std::sqrt(v);
  }
  return out;
}

template <class T>
bsr_matrix<T> prune_blocks(std::span<const T> dense, std::int64_t rows, std::int64_t cols,
                           const prune_options& options) {
  expects(options.sparsity.has_value() != options.threshold.has_value(),
          "give exactly one of prune_options::sparsity and prune_options::threshold");
  if (options.sparsity) {
    expects(*options.sparsity >= 0.0 && *options.sparsity <= 1.0, "sparsity must be in [0, 1]");
  } else {
    expects(std::isfinite(*options.threshold) && *options.threshold >= 0.0, "threshold must be finite and >= 0");
  }
  const block_shape block = options.block;
  const std::vector<double> norms = block_norms(dense, rows, cols, block, options.norm);
  expects(std::none_of(norms.begin(), norms.end(), [](double v) { return std::isnan(v); }),
          "dense holds NaN, which has no magnitude to rank");
  const std::int64_t block_rows = (rows + block.rows - 1) / block.rows;
  const std::int64_t block_cols = (cols + block.cols - 1) / block.cols;
  const auto total = static_cast<std::int64_t>(norms.size());

  std::vector<bool> keep(norms.size(), false);
  if (options.equal_blocks_per_row) {
    std::int64_t per_row = 0;
    if (options.sparsity) {
      per_row = std::llround((1.0 - *options.sparsity) * static_cast<double>(block_cols));
    } else if (block_rows > 0) {
      const auto above = std::count_if(norms.begin(), norms.end(), [&](double v) { return v >= *options.threshold; });
      per_row = std::llround(static_cast<double>(above) / static_cast<double>(block_rows));
    }
    std::vector<std::int64_t> row(static_cast<std::size_t>(block_cols));
    for (std::int64_t i = 0; i < block_rows; ++i) {
      std::iota(row.begin(), row.end(), i * block_cols);
      detail::keep_best(row, per_row, norms, keep);
    }
  } else if (options.sparsity) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(total));
    std::iota(all.begin(), all.end(), 0);
    detail::keep_best(all, total - std::llround(*options.sparsity * static_cast<double>(total)), norms, keep);
  } else {
    for (std::size_t b = 0; b < norms.size(); ++b) keep[b] = norms[b] >= *options.threshold;
  }

  // Copy the kept blocks out in BSR order; the constructor checks the result.
  const std::int64_t r = block.rows;
  const std::int64_t c = block.cols;
  std::vector<std::int32_t> row_ptr{0};
  std::vector<std::int32_t> col_ind;
  std::vector<T> values;
  for (std::int64_t bi = 0; bi < block_rows; ++bi) {
    for (std::int64_t bj = 0; bj < block_cols; ++bj) {
      if (!keep[static_cast<std::size_t>(bi * block_cols + bj)]) continue;
      col_ind.push_back(static_cast<std::int32_t>(bj));
      const std::size_t base = values.size();
      values.resize(base + static_cast<std::size_t>(r * c), T(0));
      for (std::int64_t j = bj * c; j < std::min(cols, bj * c + c); ++j) {
        for (std::int64_t i = bi * r; i < std::min(rows, bi * r + r); ++i) {
          values[base + static_cast<std::size_t>((j - bj * c) * r + (i - bi * r))] =
              dense[static_cast<std::size_t>(i * cols + j)];
        }
      }
    }
    row_ptr.push_back(static_cast<std::int32_t>(col_ind.size()));
  }
  return bsr_matrix<T>(rows, cols, block, std::move(row_ptr), std::move(col_ind), std::move(values));
}

}  // namespace inferopt::sparse
