#pragma once
// Shapes and element types of the operands of Gemm and MatMul, shared by the fusions that
// rewrite them. Everything here reads the graph; nothing edits it.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt::detail {

/// The dims of `v` when all are known: a constant's own dims, else its type's dims when each
/// one is a number. nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int64_t>> static_dims(const pass_context& ctx, const ir::value* v);

/// The rank of `v`: a constant's rank, else its type's rank (symbolic dims allowed).
[[nodiscard]] std::optional<std::size_t> known_rank(const pass_context& ctx, const ir::value* v);

/// Size of `v`'s axis `axis` (counted from the front) when it is a known number.
[[nodiscard]] std::optional<std::int64_t> static_dim(const pass_context& ctx, const ir::value* v, std::size_t axis);

/// `v`'s element type: a constant's dtype, else its type's element type (`undefined` when
/// neither is known).
[[nodiscard]] ir::data_type element_type(const pass_context& ctx, const ir::value* v);

/// Whether the operands that are known agree on one floating element type and at least one of
/// them is known. Null operands (omitted inputs) are skipped.
[[nodiscard]] bool same_floating_type(const pass_context& ctx, std::initializer_list<const ir::value*> operands);

/// Whether `n` is a default-domain Transpose that swaps the two axes of a matrix: perm [1,0],
/// or no perm on an input known to be 2-D.
[[nodiscard]] bool is_matrix_transpose(const pass_context& ctx, const ir::node* n);

/// The values of constant `c` as one value per column of an output whose last axis has
/// `columns` entries and whose rank is `output_rank` (nullopt when unknown): `c` must vary
/// only along its last axis (every other dim 1), that axis must be 1 or `columns`, and `c`
/// must not add axes to the output (its rank at most the output's, or at most 1 when the
/// output's rank is unknown). nullopt when `c` is not such a floating constant.
[[nodiscard]] std::optional<std::vector<double>> per_column_constant(const pass_context& ctx, const ir::value* c,
                                                                     std::int64_t columns,
                                                                     std::optional<std::size_t> output_rank);

/// Whether a value with these dims broadcasts unidirectionally to [m, n] (Gemm's rule for C
/// from opset 7): rank at most 2, each dim 1 or the matching output dim. An output dim that is
/// not known (nullopt) only accepts 1.
[[nodiscard]] bool broadcasts_to_matrix(const std::vector<std::int64_t>& dims, std::optional<std::int64_t> m,
                                        std::optional<std::int64_t> n);

}  // namespace inferopt::detail
