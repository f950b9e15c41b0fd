#pragma once
/// The graph op `inferopt.BlockSparseMatMul` (docs/SPARSE_OPS.md): its names and the layout of
/// the BSR arrays it carries as initializers, converted to and from a `bsr_matrix`.
///
/// The op stores what a reader of the model expects rather than what the kernel wants:
/// 64-bit indices (ONNX's integer type for indices) and blocks row-major, as a tensor of shape
/// [nnz_blocks, r, c]. `bsr_matrix` keeps 32-bit indices and column-major blocks, so the
/// executor converts once, when it builds the kernel. Everything here is free of the IR, and
/// header-only.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "inferopt/sparse/bsr_matrix.hpp"

namespace inferopt::sparse {

/// Names of the op and its attributes, shared by the pass that emits it, the executor's kernel
/// and the tests.
namespace block_sparse_matmul_op {
inline constexpr std::string_view domain = "inferopt";
inline constexpr std::string_view op_type = "BlockSparseMatMul";
inline constexpr std::int64_t version = 1;  ///< the opset version of `domain` it belongs to
}  // namespace block_sparse_matmul_op

/// The BSR arrays of a matrix as the op stores them.
struct bsr_op_arrays {
  std::vector<std::int64_t> row_ptr;  ///< block rows + 1 entries
  std::vector<std::int64_t> col_ind;  ///< one block column per stored block
  std::vector<float> values;          ///< nnz_blocks * r * c values; block b's (i, j) at b*r*c + i*c + j
};

/// The op's arrays of `m`: indices widened to 64 bits, blocks transposed to row-major.
[[nodiscard]] inline bsr_op_arrays to_op_arrays(const bsr_matrix<float>& m);

/// The matrix behind the op's arrays, checked: `rows` x `cols` with `block`-shaped blocks,
/// `values` in the op's row-major block layout.
/// @throws inferopt::error(errc::invalid_argument), one line naming the problem: array sizes
/// that do not fit (row_ptr not block rows + 1 long, values not col_ind.size() * r * c), an
/// index outside 32 bits, or anything `bsr_matrix`'s constructor refuses (row pointers that do
/// not start at 0, decrease or do not end at the block count; column indices out of range or
/// not strictly increasing; nonzeros outside the matrix; a block extent outside 1..64).
[[nodiscard]] inline bsr_matrix<float> from_op_arrays(std::int64_t rows, std::int64_t cols, block_shape block,
                                               std::span<const std::int64_t> row_ptr,
                                               std::span<const std::int64_t> col_ind, std::span<const float> values);

}  // namespace inferopt::sparse

#include "inferopt/sparse/detail/block_sparse_matmul_op_impl.hpp"
