#pragma once
/// The operands of Gemm and MatMul as the rewrites that fold into them (bias, per-column
/// scales, transposes) and the block-sparse pass read them. Reading only.

#include <cstdint>
#include <optional>
#include <vector>

#include "inferopt/ir/node.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir {

/// Whether `n` is a live default-domain Transpose that swaps the two axes of a matrix: perm
/// [1,0], or no perm on an input known to be 2-D.
[[nodiscard]] bool is_matrix_transpose(const node* n);

/// The values of constant `c` as one value per column of an output whose last axis has
/// `columns` entries and whose rank is `output_rank` (nullopt when unknown): `c` must vary
/// only along its last axis (every other dim 1), that axis must be 1 or `columns`, and `c`
/// must not add axes to the output (its rank at most the output's, or at most 1 when the
/// output's rank is unknown). nullopt when `c` is not such a floating constant.
[[nodiscard]] std::optional<std::vector<double>> per_column_constant(const value* c, std::int64_t columns,
                                                                     std::optional<std::size_t> output_rank,
                                                                     std::int64_t ir_version);

/// Whether a value with these dims broadcasts unidirectionally to [m, n] (Gemm's rule for C
/// from opset 7): rank at most 2, each dim 1 or the matching output dim. An output dim that is
/// not known (nullopt) only accepts 1.
[[nodiscard]] bool broadcasts_to_matrix(const std::vector<std::int64_t>& dims, std::optional<std::int64_t> m,
                                        std::optional<std::int64_t> n);

}  // namespace inferopt::ir
