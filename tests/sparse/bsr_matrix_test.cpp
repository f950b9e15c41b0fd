#include "inferopt/sparse/bsr_matrix.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"

using namespace inferopt;
using sparse::block_shape;
using sparse::bsr_matrix;

namespace {

// A dense rows x cols matrix where each r x c block is zero with probability `zero_blocks`.
std::vector<float> random_blocky(std::int64_t rows, std::int64_t cols, block_shape block, double zero_blocks,
                                 unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  std::bernoulli_distribution zero(zero_blocks);
  const std::int64_t block_cols = (cols + block.cols - 1) / block.cols;
  const std::int64_t block_rows = (rows + block.rows - 1) / block.rows;
  std::vector<bool> zeroed(static_cast<std::size_t>(block_rows * block_cols));
  for (auto&& z : zeroed) z = zero(rng);
  std::vector<float> dense(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const bool z = zeroed[static_cast<std::size_t>((i / block.rows) * block_cols + j / block.cols)];
      dense[static_cast<std::size_t>(i * cols + j)] = z ? 0.0F : value(rng);
    }
  }
  return dense;
}

// Checks that constructing from the arrays throws invalid_argument with `expected` in the message.
void require_rejected(std::int64_t rows, std::int64_t cols, block_shape block, std::vector<std::int32_t> row_ptr,
                      std::vector<std::int32_t> col_ind, std::vector<float> values, const std::string& expected) {
  try {
    bsr_matrix<float> m(rows, cols, block, std::move(row_ptr), std::move(col_ind), std::move(values));
    FAIL("accepted malformed arrays; expected: " << expected);
  } catch (const inferopt::error& e) {
    CAPTURE(e.what());
    CHECK(e.code() == errc::invalid_argument);
    CHECK(std::string(e.what()).find(expected) != std::string::npos);
    CHECK(std::string(e.what()).rfind("bsr_matrix: ", 0) == 0);
  }
}

}  // namespace

TEST_CASE("bsr matrix converts dense matrices to blocks and back without loss", "[sparse][bsr_matrix]") {
  auto [rows, cols, br, bc] = GENERATE(table<std::int64_t, std::int64_t, std::int32_t, std::int32_t>({
      {64, 64, 16, 16},
      {37, 53, 8, 8},   // ragged edges in both directions
      {5, 7, 4, 3},     // smaller than two blocks
      {33, 20, 32, 1},  // tall thin blocks
      {1, 130, 1, 64},
      {9, 9, 1, 1},
      {0, 12, 4, 4},  // no rows at all
  }));
  const double zero_blocks = GENERATE(0.0, 0.5, 1.0);
  CAPTURE(rows, cols, br, bc, zero_blocks);
  const block_shape block{br, bc};
  const auto dense = random_blocky(rows, cols, block, zero_blocks, 7);
  const auto m = bsr_matrix<float>::from_dense(dense, rows, cols, block);
  CHECK(m.rows() == rows);
  CHECK(m.cols() == cols);
  CHECK(m.block() == block);
  CHECK(m.to_dense() == dense);
  CHECK(static_cast<std::int64_t>(m.row_ptr().size()) == m.block_rows() + 1);
  CHECK(static_cast<std::int64_t>(m.values().size()) == m.nnz_blocks() * block.size());
  if (zero_blocks == 1.0) CHECK(m.nnz_blocks() == 0);
  if (zero_blocks == 0.0) CHECK(m.block_sparsity() == 0.0);

  SECTION("the arrays rebuild an equal matrix") {
    const bsr_matrix<float> again(rows, cols, block, {m.row_ptr().begin(), m.row_ptr().end()},
                                  {m.col_ind().begin(), m.col_ind().end()}, {m.values().begin(), m.values().end()});
    CHECK(again == m);
  }
  SECTION("the transpose holds the transposed matrix and transposes back to the original") {
    const auto t = m.transposed();
    CHECK(t.rows() == cols);
    CHECK(t.cols() == rows);
    CHECK(t.block() == block_shape{bc, br});
    const auto td = t.to_dense();
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        REQUIRE(td[static_cast<std::size_t>(j * rows + i)] == dense[static_cast<std::size_t>(i * cols + j)]);
      }
    }
    CHECK(t.transposed() == m);
  }
  SECTION("to_dense writes into a matrix with a wider row stride") {
    const std::int64_t ld = cols + 3;
    std::vector<float> out(static_cast<std::size_t>(rows * ld), -5.0F);
    m.to_dense(out, ld);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        REQUIRE(out[static_cast<std::size_t>(i * ld + j)] == dense[static_cast<std::size_t>(i * cols + j)]);
      }
      for (std::int64_t j = cols; j < ld; ++j) REQUIRE(out[static_cast<std::size_t>(i * ld + j)] == -5.0F);
    }
  }
}

TEST_CASE("bsr matrix stores block values column-major", "[sparse][bsr_matrix]") {
  // 2 x 4 matrix, 2 x 2 blocks; only the right block is nonzero.
  const std::vector<double> dense{0, 0, 1, 2,  //
                                  0, 0, 3, 4};
  const auto m = bsr_matrix<double>::from_dense(dense, 2, 4, {2, 2});
  REQUIRE(m.nnz_blocks() == 1);
  CHECK(m.col_ind()[0] == 1);
  CHECK(std::vector<double>(m.values().begin(), m.values().end()) == std::vector<double>{1, 3, 2, 4});
  CHECK(m.block_sparsity() == Approx(0.5));
  CHECK(m.view().values == m.values().data());
}

TEST_CASE("bsr matrix rejects malformed arrays with a message naming the problem", "[sparse][bsr_matrix]") {
  // 8 x 8 with 4 x 4 blocks: 2 block rows, 2 block columns, 16 values per block.
  const block_shape b4{4, 4};
  const std::vector<float> one(16, 1.0F);
  const std::vector<float> two(32, 1.0F);
  SECTION("block shapes outside 1..64") {
    require_rejected(8, 8, {0, 4}, {0, 0}, {}, {}, "block shape 0x4 is outside 1..64");
    require_rejected(8, 8, {4, 65}, {0, 0}, {}, {}, "block shape 4x65 is outside 1..64");
  }
  SECTION("negative dimensions") { require_rejected(-1, 8, b4, {0}, {}, {}, "negative dimensions"); }
  SECTION("a row_ptr of the wrong length") {
    require_rejected(8, 8, b4, {0, 1}, {0}, one, "row_ptr has 2 entries, expected block rows + 1 = 3");
  }
  SECTION("values of the wrong length") {
    require_rejected(8, 8, b4, {0, 1, 1}, {0}, two, "values has 32 entries, expected 1 blocks of 16 = 16");
  }
  SECTION("a row_ptr that does not start at zero") {
    require_rejected(8, 8, b4, {1, 1, 1}, {0}, one, "row_ptr[0] is 1, expected 0");
  }
  SECTION("a row_ptr that decreases") {
    require_rejected(8, 8, b4, {0, 2, 1}, {0, 1}, two, "row_ptr decreases: row_ptr[2] = 1 < row_ptr[1] = 2");
  }
  SECTION("a row_ptr that does not end at the number of blocks") {
    require_rejected(8, 8, b4, {0, 1, 1}, {0, 1}, two, "row_ptr ends at 1, expected the number of blocks 2");
  }
  SECTION("column indices out of range") {
    require_rejected(8, 8, b4, {0, 1, 1}, {2}, one, "col_ind[0] = 2 is out of range [0, 2)");
    require_rejected(8, 8, b4, {0, 1, 1}, {-1}, one, "col_ind[0] = -1 is out of range [0, 2)");
  }
  SECTION("unsorted and duplicate column indices") {
    require_rejected(8, 8, b4, {0, 2, 2}, {1, 0}, two,
                     "block row 0: column indices are not strictly increasing (col_ind[1] = 0 after 1)");
    require_rejected(8, 8, b4, {0, 0, 2}, {1, 1}, two,
                     "block row 1: column indices are not strictly increasing (col_ind[1] = 1 after 1)");
  }
  SECTION("a nonzero stored outside the matrix") {
    // 6 x 6 with 4 x 4 blocks: the last block sticks out by two rows and two columns.
    std::vector<float> v(16, 0.0F);
    v[3 * 4 + 3] = 1.0F;  // entry (3, 3) of block (1, 1) is element (7, 7)
    require_rejected(6, 6, b4, {0, 0, 1}, {1}, v, "holds a nonzero outside the 6x6 matrix");
    v[3 * 4 + 3] = std::numeric_limits<float>::quiet_NaN();
    require_rejected(6, 6, b4, {0, 0, 1}, {1}, v, "holds a nonzero outside the 6x6 matrix");
    v[3 * 4 + 3] = 0.0F;
    v[1 * 4 + 1] = 2.0F;  // entry (1, 1): element (5, 5), inside
    CHECK(bsr_matrix<float>(6, 6, b4, {0, 0, 1}, {1}, v).to_dense()[35] == 2.0F);
  }
}

TEST_CASE("validate checks borrowed arrays as the constructor does", "[sparse][bsr_matrix]") {
  const std::vector<std::int32_t> row_ptr{0, 2, 2};
  const std::vector<std::int32_t> col_ind{1, 0};
  const std::vector<float> values(32, 1.0F);
  const sparse::bsr_view<const float> v{8, 8, {4, 4}, 2, row_ptr.data(), col_ind.data(), values.data()};
  REQUIRE_THROWS_AS(sparse::validate(v), inferopt::error);
  const std::vector<std::int32_t> sorted{0, 1};
  const sparse::bsr_view<const float> ok{8, 8, {4, 4}, 2, row_ptr.data(), sorted.data(), values.data()};
  REQUIRE_NOTHROW(sparse::validate(ok));
}

TEST_CASE("bsr matrix from_dense refuses a dense array of the wrong size", "[sparse][bsr_matrix]") {
  const std::vector<float> dense(10, 1.0F);
  REQUIRE_THROWS_AS(bsr_matrix<float>::from_dense(dense, 3, 4, {2, 2}), inferopt::error);
  REQUIRE_THROWS_AS(bsr_matrix<float>::from_dense(dense, 2, 5, {2, 0}), inferopt::error);
}

TEST_CASE("an empty bsr matrix has no blocks", "[sparse][bsr_matrix]") {
  const bsr_matrix<float> m;
  CHECK(m.rows() == 0);
  CHECK(m.nnz_blocks() == 0);
  CHECK(m.row_ptr().size() == 1);
  CHECK(m.to_dense().empty());
  CHECK(m.transposed() == m);
}
