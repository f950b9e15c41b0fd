#pragma once
/// The checks every model from outside passes before any command works on it.
///
/// Models come from strangers. `validate` refuses, with one line naming the node and the
/// problem, what onnxruntime would refuse and what would take our own code down: node
/// input/output counts and attribute types outside the op's schema, attribute values outside
/// their range (a zero stride, a negative pad, a perm that is no permutation), element types
/// the op does not take, sequences or maps where a tensor is required, shapes that
/// contradict the nodes, and sizes past `model_limits`. Every check is linear in the size of
/// the model, so a hostile file cannot turn validation itself into a hang.

#include <cstdint>
#include <cstddef>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

/// Sizes past which a model is refused rather than processed. Real models stay far below
/// them; a file past them is broken or hostile, and processing it would exhaust memory or
/// time before it failed anywhere else.
struct model_limits {
  std::size_t max_node_inputs = 16384;
  std::size_t max_node_outputs = 16384;
  std::size_t max_subgraph_depth = 16;       ///< If/Loop/Scan bodies nested in each other
  std::int64_t max_tensor_elements = std::int64_t{1} << 31;  ///< any value with a static shape
};

/// Runs every check, in this order: sizes, graph structure (`find_problems`), op schemas and
/// attribute ranges, then shape inference on a copy (contradictions, element types against
/// the ops' type constraints, tensor sizes). The model itself is not changed.
/// @throws error(errc::invalid_model) with the first problem found.
void validate(const model& m, const model_limits& limits = {});

}  // namespace inferopt::ir
