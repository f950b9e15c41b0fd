#pragma once
// The per-node checks `ir::validate` runs, one family per file. Private to src/ir/validate.
// Each throws error(errc::invalid_model) naming the node and the problem.

#include <cstdint>
#include <optional>
#include <string>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/node.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir::validation {

/// Throws the one refusal every check makes: `node NAME (Op): what`.
[[noreturn]] inline void refuse(const node& n, const std::string& what) {
  throw error(errc::invalid_model, "node " + n.describe() + ": " + what);
}

/// The dims of `v` where they are known: an initializer's own (initializers need not be
/// declared), else the declared or inferred ones.
[[nodiscard]] inline std::optional<shape> known_dims(const value& v) {
  if (v.is_initializer()) return shape(v.initializer()->dims.begin(), v.initializer()->dims.end());
  if (v.type() && v.type()->is_tensor && v.type()->dims) return *v.type()->dims;
  return std::nullopt;
}

/// Input and output counts, attribute names, types and presence, and required inputs given,
/// against the op's schema in force at `opset`, the model's import of the node's domain
/// (the table generated from the onnx and onnxruntime packages, generated_schemas.hpp). An
/// op the opset does not define is refused.
void check_schema(const node& n, std::int64_t opset);

/// Attribute values the schemas cannot express: strides, dilations and kernel sizes above 0,
/// pads at least 0, a group of at least 1, a perm that is a permutation, block sizes above 0,
/// a Cast target that is a data type, a normalization's epsilon finite and not negative.
void check_attribute_ranges(const node& n);

/// The element types of the node's inputs and outputs (as shape inference left them) against
/// the op's type constraints: each type a constraint allows, one type per constraint, and a
/// tensor wherever only tensors are allowed. Values of unknown type are not judged.
void check_type_constraints(const node& n, std::int64_t opset);

/// If, Loop and Scan against their bodies: as many node outputs as the body gives (for Loop,
/// the loop-carried and scan outputs), the inputs a Loop body takes, and an If condition of
/// one element where its shape is declared.
void check_subgraph_interfaces(const node& n);

/// Axis attributes against the rank of the input they index (as shape inference left it):
/// Softmax's axis, Concat's, Gather's, Flatten's, the axes lists of the reductions and of
/// Squeeze/Unsqueeze before opset 13, Transpose's perm length; and Resize's scales or sizes,
/// not both (from opset 11 one of them), with an entry per resized axis. Unknown ranks are not judged.
void check_axes_against_ranks(const node& n, std::int64_t opset);

/// Inputs that hold lists (shapes, pads, axes, scales, sizes, repeats, slice bounds) are
/// vectors, and a constant ConstantOfShape shape has no negative entry.
void check_operand_shapes(const node& n);

}  // namespace inferopt::ir::validation
