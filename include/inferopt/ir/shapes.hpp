#pragma once
/// What the graph knows of a value's shape and element type, and the integer-list operands of
/// shape-like ops (Reshape, Squeeze, Transpose, Pad, Slice, ...) in either opset form. Reading
/// only; nothing here edits the graph.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "inferopt/ir/node.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir {

// One rule for every query below: a value's type says what is known of it; an initializer
// whose type lacks the answer (a graph input declared with symbolic dims in an IR < 4 model,
// say) falls back to its tensor's own dims and element type.

/// The dims of `v` when all are known numbers; nullopt otherwise (also for a null `v`).
[[nodiscard]] std::optional<std::vector<std::int64_t>> static_dims(const value* v);

/// The rank of `v` when known (symbolic dims allowed).
[[nodiscard]] std::optional<std::size_t> known_rank(const value* v);

/// Size of `v`'s axis `axis` (counted from the front) when it is a known number.
[[nodiscard]] std::optional<std::int64_t> static_dim(const value* v, std::size_t axis);

/// `v`'s element type; `undefined` when not known.
[[nodiscard]] data_type element_type(const value* v);

/// Whether the operands that are known agree on one floating element type and at least one of
/// them is known. Null operands (omitted inputs) are skipped.
[[nodiscard]] bool same_floating_type(std::initializer_list<const value*> operands);

/// An integer-list operand (axes, pads, starts, a target shape) that an opset either passes
/// as an attribute or as an optional input. `present` is false when it was omitted.
struct int_list {
  bool present = false;
  std::vector<std::int64_t> values;
};

/// Reads the operand from attribute `attribute` when `from_attribute` (the older opset form),
/// else from input `input` (a constant int32/int64 tensor, see constants.hpp). nullopt when it
/// is given but not constant, so its values cannot be known.
[[nodiscard]] std::optional<int_list> int_list_operand(const node& n, std::string_view attribute, std::size_t input,
                                                       bool from_attribute, std::int64_t ir_version);

/// `axes` made non-negative against `rank`, sorted; nullopt when one is out of range or
/// repeated.
[[nodiscard]] std::optional<std::vector<std::int64_t>> normalized_axes(std::vector<std::int64_t> axes,
                                                                       std::int64_t rank);

}  // namespace inferopt::ir
