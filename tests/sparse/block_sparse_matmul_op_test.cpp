// The BSR arrays of inferopt.BlockSparseMatMul: 64-bit indices and row-major blocks, converted
// to and from bsr_matrix without loss, and malformed arrays refused with one line.

#include "inferopt/sparse/block_sparse_matmul_op.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "support/random_values.hpp"

using namespace inferopt;
using sparse::block_shape;

namespace {

using test::random_dense;

/// The message `from_op_arrays` throws for these arrays; fails the test when it accepts them.
std::string rejection(std::int64_t rows, std::int64_t cols, block_shape block, std::vector<std::int64_t> row_ptr,
                      std::vector<std::int64_t> col_ind, std::vector<float> values) {
  try {
    (void)sparse::from_op_arrays(rows, cols, block, row_ptr, col_ind, values);
  } catch (const inferopt::error& e) {
    CHECK(e.code() == errc::invalid_argument);
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    return what;
  }
  FAIL("malformed arrays were accepted");
  return {};
}

}  // namespace

TEST_CASE("op arrays store blocks row-major with 64-bit indices", "[sparse][block_sparse_matmul_op]") {
  // 4 x 6 with 2 x 3 blocks: block (0, 1) and block (1, 0) are nonzero.
  const std::vector<float> dense{0, 0, 0, 1, 2, 3,  //
                                 0, 0, 0, 4, 5, 6,  //
                                 7, 8, 9, 0, 0, 0,  //
                                 10, 11, 12, 0, 0, 0};
  const auto m = sparse::bsr_matrix<float>::from_dense(dense, 4, 6, {2, 3});
  const sparse::bsr_op_arrays a = sparse::to_op_arrays(m);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 1, 2});
  CHECK(a.col_ind == std::vector<std::int64_t>{1, 0});
  CHECK(a.values == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
}

TEST_CASE("op arrays round-trip through bsr_matrix without loss", "[sparse][block_sparse_matmul_op]") {
  auto [rows, cols, br, bc] = GENERATE(table<std::int64_t, std::int64_t, std::int32_t, std::int32_t>({
      {64, 64, 16, 16},
      {37, 53, 8, 8},  // ragged edges
      {50, 70, 8, 16},  // non-square blocks
      {5, 7, 4, 3},
      {3, 130, 1, 64},
  }));
  CAPTURE(rows, cols, br, bc);
  sparse::prune_options o;
  o.block = {br, bc};
  o.sparsity = 0.6;
  const auto m = sparse::prune_blocks<float>(random_dense(rows, cols, 3), rows, cols, o);
  const sparse::bsr_op_arrays a = sparse::to_op_arrays(m);
  CHECK(a.values.size() == a.col_ind.size() * static_cast<std::size_t>(br * bc));
  const auto back = sparse::from_op_arrays(rows, cols, {br, bc}, a.row_ptr, a.col_ind, a.values);
  CHECK(back == m);
}

TEST_CASE("malformed op arrays are refused with one line naming the problem", "[sparse][block_sparse_matmul_op]") {
  // 4 x 4 with 2 x 2 blocks: two block rows, two block columns.
  const std::vector<float> block(4, 1.0F);
  auto blocks = [&](int n) {
    std::vector<float> v;
    for (int i = 0; i < n; ++i) v.insert(v.end(), block.begin(), block.end());
    return v;
  };
  SECTION("row_ptr of the wrong length") {
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 1}, {0}, blocks(1)), Catch::Contains("row_ptr has 2 entries, expected 3"));
  }
  SECTION("values of the wrong length") {
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 1, 2}, {0, 1}, blocks(1)), Catch::Contains("values has 4 entries, expected 8"));
  }
  SECTION("an index beyond 32 bits") {
    const std::int64_t big = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 1, 2}, {0, big}, blocks(2)),
               Catch::Contains("col_ind[1] = 2147483648 does not fit in 32 bits"));
  }
  SECTION("a column index out of range") {
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 1, 2}, {0, 2}, blocks(2)), Catch::Contains("out of range"));
  }
  SECTION("column indices out of order") {
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 2, 2}, {1, 0}, blocks(2)), Catch::Contains("not strictly increasing"));
  }
  SECTION("a row pointer that decreases") {
    CHECK_THAT(rejection(4, 4, {2, 2}, {0, 2, 1}, {0}, blocks(1)), Catch::Contains("row_ptr"));
  }
  SECTION("a block extent outside 1..64") {
    CHECK_THAT(rejection(4, 4, {0, 2}, {0}, {}, {}), Catch::Contains("outside 1..64"));
  }
  SECTION("a nonzero stored outside the matrix") {
    CHECK_THAT(rejection(3, 4, {2, 2}, {0, 0, 1}, {0}, blocks(1)), Catch::Contains("outside"));
  }
}
