#pragma once
/// Structural checks of a graph, and libonnx's checker and shape inference as cross-checks.

#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/shape_inference.hpp"

namespace inferopt::ir {

/// Every structural problem of `g` and its subgraphs, one line each, naming the node:
/// values defined twice, nodes out of topological order, inputs that name no visible value,
/// use lists that disagree with node inputs, undefined graph outputs, subgraph references
/// that no enclosing graph defines (or defines only after the subgraph's node).
[[nodiscard]] std::vector<std::string> find_problems(const graph& g);

/// Throws `error(errc::verification)` with the first problem `find_problems` reports.
void verify(const graph& g);

/// Runs libonnx's shape inference and records the inferred types on the model's values: a
/// cross-check of our own (`ir/shape_inference.hpp`), which is the source of truth. Skipped,
/// with a note and never an exception, when the model imports a default-domain opset newer
/// than the linked ONNX library knows.
shape_inference_report infer_shapes_with_onnx(model& m);

/// ONNX's model checker; throws `error(errc::verification)` with the checker's message.
void check_with_onnx(const model& m);

}  // namespace inferopt::ir
