#include "inferopt/sparse/block_prune.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "inferopt/core/error.hpp"
#include "support/random_values.hpp"

using namespace inferopt;
using sparse::block_norm;
using sparse::block_shape;
using sparse::prune_options;

namespace {

using test::random_dense;

// Whether block (bi, bj) is stored.
bool is_kept(const sparse::bsr_matrix<float>& m, std::int64_t bi, std::int64_t bj) {
  const auto cols = m.col_ind().subspan(static_cast<std::size_t>(m.row_ptr()[static_cast<std::size_t>(bi)]),
                                        static_cast<std::size_t>(m.row_ptr()[static_cast<std::size_t>(bi) + 1] -
                                                                 m.row_ptr()[static_cast<std::size_t>(bi)]));
  return std::find(cols.begin(), cols.end(), bj) != cols.end();
}

}  // namespace

TEST_CASE("block pruning hits the target sparsity and keeps the largest blocks", "[sparse][block_prune]") {
  auto [rows, cols, br, bc] = GENERATE(table<std::int64_t, std::int64_t, std::int32_t, std::int32_t>({
      {128, 128, 16, 16},
      {100, 70, 8, 8},  // ragged: partial blocks on both edges
      {64, 96, 32, 32},
      {48, 40, 4, 5},
  }));
  const double sparsity = GENERATE(0.0, 0.5, 0.75, 0.9, 1.0);
  const block_norm norm = GENERATE(block_norm::l1, block_norm::l2);
  CAPTURE(rows, cols, br, bc, sparsity, static_cast<int>(norm));
  const auto dense = random_dense(rows, cols, 3);
  prune_options options;
  options.block = {br, bc};
  options.norm = norm;
  options.sparsity = sparsity;
  const auto m = sparse::prune_blocks<float>(dense, rows, cols, options);
  const auto norms = sparse::block_norms<float>(dense, rows, cols, options.block, norm);
  const auto grid = static_cast<std::int64_t>(norms.size());
  CHECK(m.nnz_blocks() == grid - std::llround(sparsity * static_cast<double>(grid)));

  // Every kept block is at least as large as every dropped one.
  double smallest_kept = std::numeric_limits<double>::infinity();
  double largest_dropped = 0.0;
  for (std::int64_t bi = 0; bi < m.block_rows(); ++bi) {
    for (std::int64_t bj = 0; bj < m.block_cols(); ++bj) {
      const double v = norms[static_cast<std::size_t>(bi * m.block_cols() + bj)];
      if (is_kept(m, bi, bj)) smallest_kept = std::min(smallest_kept, v);
      else largest_dropped = std::max(largest_dropped, v);
    }
  }
  CHECK(smallest_kept >= largest_dropped);

  // Kept blocks keep their values; dropped ones are zeros.
  const auto back = m.to_dense();
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const float expect = is_kept(m, i / br, j / bc) ? dense[static_cast<std::size_t>(i * cols + j)] : 0.0F;
      REQUIRE(back[static_cast<std::size_t>(i * cols + j)] == expect);
    }
  }
}

TEST_CASE("block norms are the l1 and l2 norms of the entries inside the matrix", "[sparse][block_prune]") {
  // 3 x 3 with 2 x 2 blocks: the right and bottom blocks are partial.
  const std::vector<double> dense{1, -2, 3,  //
                                  -4, 5, 6,  //
                                  7, 8, -9};
  const auto l1 = sparse::block_norms<double>(dense, 3, 3, {2, 2}, block_norm::l1);
  CHECK(l1 == std::vector<double>{12, 9, 15, 9});
  const auto l2 = sparse::block_norms<double>(dense, 3, 3, {2, 2}, block_norm::l2);
  CHECK(l2[0] == Approx(std::sqrt(1.0 + 4 + 16 + 25)));
  CHECK(l2[3] == Approx(9.0));
}

TEST_CASE("the norm decides which blocks survive", "[sparse][block_prune]") {
  // Block 0 has one large entry (l2 wins), block 1 many medium ones (l1 wins).
  const std::vector<float> dense{10, 0, 4, 4,  //
                                 0, 0, 4, 4};
  prune_options options;
  options.block = {2, 2};
  options.sparsity = 0.5;
  options.norm = block_norm::l2;
  CHECK(sparse::prune_blocks<float>(dense, 2, 4, options).col_ind()[0] == 0);
  options.norm = block_norm::l1;
  CHECK(sparse::prune_blocks<float>(dense, 2, 4, options).col_ind()[0] == 1);
}

TEST_CASE("equal-blocks-per-row pruning keeps the same number of blocks in every block row", "[sparse][block_prune]") {
  const std::int64_t rows = 96;
  const std::int64_t cols = 80;  // 16 x 16 blocks: 6 block rows, 5 block columns
  auto dense = random_dense(rows, cols, 11);
  // Make block row 0 much larger than the rest: global ranking would keep all of it.
  for (std::int64_t i = 0; i < 16; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) dense[static_cast<std::size_t>(i * cols + j)] *= 100.0F;
  }
  prune_options options;
  options.block = {16, 16};
  options.sparsity = 0.6;
  options.equal_blocks_per_row = true;
  const auto m = sparse::prune_blocks<float>(dense, rows, cols, options);
  const auto norms = sparse::block_norms<float>(dense, rows, cols, options.block, options.norm);
  for (std::int64_t bi = 0; bi < m.block_rows(); ++bi) {
    CAPTURE(bi);
    CHECK(m.row_ptr()[static_cast<std::size_t>(bi) + 1] - m.row_ptr()[static_cast<std::size_t>(bi)] == 2);
    // Within the row, the kept blocks are the largest.
    double smallest_kept = std::numeric_limits<double>::infinity();
    double largest_dropped = 0.0;
    for (std::int64_t bj = 0; bj < m.block_cols(); ++bj) {
      const double v = norms[static_cast<std::size_t>(bi * m.block_cols() + bj)];
      if (is_kept(m, bi, bj)) smallest_kept = std::min(smallest_kept, v);
      else largest_dropped = std::max(largest_dropped, v);
    }
    CHECK(smallest_kept >= largest_dropped);
  }
  CHECK(m.block_sparsity() == Approx(0.6));

  SECTION("with a threshold, the count above it is shared out evenly") {
    std::vector<double> sorted = norms;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    prune_options by_threshold = options;
    by_threshold.sparsity.reset();
    by_threshold.threshold = sorted[17];  // 18 blocks at or above: 3 per block row
    const auto t = sparse::prune_blocks<float>(dense, rows, cols, by_threshold);
    for (std::int64_t bi = 0; bi < t.block_rows(); ++bi) {
      CHECK(t.row_ptr()[static_cast<std::size_t>(bi) + 1] - t.row_ptr()[static_cast<std::size_t>(bi)] == 3);
    }
  }
}

TEST_CASE("threshold pruning removes exactly the blocks below the threshold", "[sparse][block_prune]") {
  const auto dense = random_dense(64, 64, 5);
  prune_options options;
  options.block = {8, 8};
  options.norm = block_norm::l1;
  const auto norms = sparse::block_norms<float>(dense, 64, 64, options.block, options.norm);
  std::vector<double> sorted = norms;
  std::sort(sorted.begin(), sorted.end());
  options.threshold = sorted[40];
  const auto m = sparse::prune_blocks<float>(dense, 64, 64, options);
  CHECK(m.nnz_blocks() == 64 - 40);
  for (std::int64_t bi = 0; bi < 8; ++bi) {
    for (std::int64_t bj = 0; bj < 8; ++bj) {
      CHECK(is_kept(m, bi, bj) == (norms[static_cast<std::size_t>(bi * 8 + bj)] >= options.threshold));
    }
  }
}

TEST_CASE("block pruning refuses contradictory or out-of-range options", "[sparse][block_prune]") {
  const auto dense = random_dense(8, 8, 1);
  prune_options options;
  options.block = {4, 4};
  SECTION("neither sparsity nor threshold") {
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(dense, 8, 8, options), inferopt::error);
  }
  SECTION("both sparsity and threshold") {
    options.sparsity = 0.5;
    options.threshold = 1.0;
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(dense, 8, 8, options), inferopt::error);
  }
  SECTION("sparsity outside [0, 1]") {
    options.sparsity = 1.5;
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(dense, 8, 8, options), inferopt::error);
  }
  SECTION("a negative threshold") {
    options.threshold = -1.0;
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(dense, 8, 8, options), inferopt::error);
  }
  SECTION("a NaN in the matrix") {
    auto bad = dense;
    bad[5] = std::numeric_limits<float>::quiet_NaN();
    options.sparsity = 0.5;
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(bad, 8, 8, options), inferopt::error);
  }
  SECTION("a dense array of the wrong size") {
    options.sparsity = 0.5;
    REQUIRE_THROWS_AS(sparse::prune_blocks<float>(dense, 8, 9, options), inferopt::error);
  }
}
