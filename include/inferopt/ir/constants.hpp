#pragma once
/// Reading and making constant operands: the graph query every rewrite shares (fusions fold
/// them, quantization and pruning cut them). Which initializers count as constants depends on
/// the model's IR version, so the functions take it rather than a pass context.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "inferopt/ir/tensor.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir {

/// float, double, float16 or bfloat16: the element types whose values rewrites may fold.
[[nodiscard]] bool is_floating(data_type t) noexcept;

/// Whether `v` holds constant data a caller cannot replace: an initializer that is not a graph
/// input, or any initializer of a model with IR version < 4, where every initializer had to be
/// listed as an input and the listing did not make it a feed (ONNX Runtime reads such models
/// the same way).
[[nodiscard]] inline bool is_constant(const value& v, std::int64_t ir_version) noexcept {
  return v.is_initializer() && (!v.is_graph_input() || ir_version < 4);
}

/// The data of `v` when it is a constant (see is_constant) that holds data; null otherwise
/// (also for a null `v`).
[[nodiscard]] const tensor* constant_tensor(const value* v, std::int64_t ir_version) noexcept;

/// The values of a floating-point tensor, widened to double; nullopt for another element type
/// or a tensor without data.
[[nodiscard]] std::optional<std::vector<double>> floats_of(const tensor& t);

/// The values of an int32/int64 tensor; nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int64_t>> ints_of(const tensor& t);

/// The values of a constant floating-point operand, widened to double; nullopt when `v` is
/// not such a constant.
[[nodiscard]] std::optional<std::vector<double>> constant_floats(const value* v, std::int64_t ir_version);

/// The values of a constant int32/int64 operand (shapes, axes, pads); nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int64_t>> constant_ints(const value* v, std::int64_t ir_version);

/// A tensor of `like`'s element type (floating) holding `values` rounded to that type. Folded
/// values are computed in double and stored back in the weights' own element type.
/// @throws error(errc::invalid_argument) when `like` is not floating.
[[nodiscard]] tensor floats_as(const tensor& like, std::vector<std::int64_t> dims, std::span<const double> values);

}  // namespace inferopt::ir
