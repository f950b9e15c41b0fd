#pragma once
/// Converting a model's default-domain (ai.onnx) opset up or down, node by node.
///
/// Each op has a list of the opsets where its definition changed (the table in
/// src/ir/opset/op_history.cpp, the same versions ONNX's schemas carry). A node crosses every
/// change between the model's opset and the target, one at a time, and each change that is
/// more than new element types has an adapter that rewrites the node: an attribute that
/// became an input (Squeeze axes at 13) gets a new initializer, a new attribute going down
/// is dropped when it holds its default, an op that was replaced (Upsample by Resize at 10)
/// becomes the other op, an axis whose meaning changed (Softmax at 13) gets the Flatten and
/// Reshape, or the Transpose, that keeps the numbers. Going down, a node whose known element
/// types the older definition does not list is refused. Nodes of other domains are left as
/// they are; If/Loop/Scan bodies are converted with their node.
///
/// Ranks, dims and element types that adapters need (Softmax's rank, the type of a Clip
/// bound made an input) come from the values' recorded types and from our shape inference
/// on a copy of the model; nothing inferred is written into the result.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

/// The opsets `convert_opset` converts to. Models may come from any opset up to the newest.
inline constexpr std::int64_t oldest_target_opset = 7;
inline constexpr std::int64_t newest_target_opset = 24;

/// What `convert_opset` did.
struct opset_conversion_report {
  std::int64_t from_opset = 0;
  std::int64_t to_opset = 0;
  /// Nodes each adapter changed, by adapter name. Nodes whose definitions differ only in the
  /// element types they accept are converted by the new import alone and are not listed.
  std::map<std::string, std::size_t> changed_nodes;
  std::size_t nodes_visited = 0;  ///< default-domain nodes, subgraphs included
  std::size_t nodes_changed = 0;  ///< nodes at least one adapter changed
  [[nodiscard]] bool converted() const noexcept { return from_opset != to_opset; }
};

/// Converts `m` to default-domain opset `target` and verifies the result's structure. A
/// model already at `target` is left as it is.
///
/// Preconditions: `m` imports the default domain (or has no default-domain node, in which
/// case only the import changes).
/// @throws error(errc::invalid_argument) when `target` is outside
///         [oldest_target_opset, newest_target_opset] or the model's opset is newer than
///         `newest_target_opset`; error(errc::unsupported), naming the node and op, when a
///         node has no definition at `target` or uses a form the target cannot express, when
///         an op is not in the table, or when the model has model-local functions;
///         error(errc::invalid_model) when a node's op has no definition at the model's own
///         opset. `m` is left as it was when anything throws.
/// Not thread-safe with respect to `m`.
opset_conversion_report convert_opset(model& m, std::int64_t target);

/// One op the converter knows and the opsets where its definition changed, oldest first.
struct op_versions {
  std::string op;
  std::vector<std::int64_t> versions;
};

/// Every default-domain op the converter knows, sorted by op (for documentation and tests).
[[nodiscard]] std::vector<op_versions> convertible_ops();

/// `converted opset 9 -> 13`, for the one line commands print.
[[nodiscard]] std::string describe(const opset_conversion_report& r);

}  // namespace inferopt::ir
