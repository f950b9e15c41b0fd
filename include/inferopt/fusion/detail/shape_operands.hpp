#pragma once
// Reading the operands of shape-like ops (Reshape, Squeeze, Transpose, Pad, Slice, ...) in
// either opset form, and forwarding a value past a chain that computes it unchanged; shared by
// the fusion cleanups.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt::detail {

/// The dims of `v` when its type is a tensor with a fully static shape; nullopt otherwise.
[[nodiscard]] std::optional<std::vector<std::int64_t>> static_dims(const ir::value* v);

/// The rank of `v` when its type gives one; nullopt otherwise.
[[nodiscard]] std::optional<std::size_t> known_rank(const ir::value* v);

/// An integer-list operand (axes, pads, starts, a target shape) that an opset either passes
/// as an attribute or as an optional input. `present` is false when it was omitted.
struct int_list {
  bool present = false;
  std::vector<std::int64_t> values;
};

/// Reads the operand from attribute `attribute` when `from_attribute` (the older opset form),
/// else from input `input` (a constant int32/int64 tensor). nullopt when it is given but not
/// constant, so its values cannot be known.
[[nodiscard]] std::optional<int_list> int_list_operand(const pass_context& ctx, const ir::node& n,
                                                       std::string_view attribute, std::size_t input,
                                                       bool from_attribute);

/// `axes` made non-negative against `rank`, sorted; nullopt when one is out of range or
/// repeated.
[[nodiscard]] std::optional<std::vector<std::int64_t>> normalized_axes(std::vector<std::int64_t> axes,
                                                                       std::int64_t rank);

/// Whether `forward_past` would succeed: output 0 of `n` is not a graph output, or `in` can
/// take its name (see can_take_output_name).
[[nodiscard]] bool can_forward_past(const ir::graph& g, const ir::node* n, const ir::value* in);

/// Makes every reader of `n`'s output 0 read `in` instead (a value computed earlier that holds
/// the same data) and erases `n`; a graph output keeps its name, which `in` takes. Requires
/// `can_forward_past(g, n, in)` and that `n` has no other used output.
void forward_past(ir::graph& g, ir::node* n, ir::value* in);

}  // namespace inferopt::detail
