#pragma once
// Reading and replacing constant operands, shared by the fusion passes. Folded weights are
// computed in double and stored back in the weights' own element type.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/tensor.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt::detail {

/// float, double, float16 or bfloat16: the element types whose values fusions may fold.
[[nodiscard]] bool is_floating(ir::data_type t) noexcept;

/// The data of `v` when it is a constant the caller cannot replace (see
/// pass_context::is_constant) and holds data; null otherwise.
[[nodiscard]] const ir::tensor* constant_tensor(const pass_context& ctx, const ir::value* v) noexcept;

/// The values of a constant floating-point operand, widened to double; nullopt when `v` is
/// not such a constant.
[[nodiscard]] std::optional<std::vector<double>> constant_floats(const pass_context& ctx, const ir::value* v);

/// The values of a constant int32/int64 operand (shapes, axes, pads); nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int64_t>> constant_ints(const pass_context& ctx, const ir::value* v);

/// A tensor of `like`'s element type (floating) holding `values` rounded to that type.
[[nodiscard]] ir::tensor floats_as(const ir::tensor& like, std::vector<std::int64_t> dims,
                                   std::span<const double> values);

/// Makes input `index` of `n` a new initializer holding `t`, named after `base`. The old
/// operand is left alone (other nodes may share it); `remove-unused` drops it once unused.
ir::value* set_constant_input(ir::graph& g, ir::node* n, std::size_t index, ir::tensor t, std::string_view base);

/// The node reading `v` when that node is its only reader and `v` is not a graph output;
/// null otherwise. A fusion that absorbs `v`'s consumer into its producer needs this.
[[nodiscard]] ir::node* sole_user(const ir::value* v) noexcept;

}  // namespace inferopt::detail
