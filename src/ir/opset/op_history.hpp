#pragma once
// The table of per-op definition changes: for every default-domain op the converter knows,
// the opsets where its definition changed (as ONNX's schemas number them), what a node must
// do to cross each change, and the element types each definition added.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "inferopt/ir/data_type.hpp"

namespace inferopt::ir::opset {

class adapter;

/// One definition of an op, in force from opset `since` until the next one.
struct definition {
  std::int64_t since = 0;
  /// What crosses from the previous definition to this one (up) and back (down); empty when
  /// only element types were added.
  std::vector<const adapter*> changes;
  /// Element types this definition accepts and the previous one did not: going down, a node
  /// using one is refused.
  std::span<const data_type> types_added;
  /// Deprecated in favour of another op, which a change converts to (Upsample by Resize).
  bool deprecated = false;
};

struct op_history {
  std::string_view op;
  std::vector<definition> definitions;  ///< oldest first; never empty
};

/// The history of a default-domain op, or null when the converter does not know the op.
[[nodiscard]] const op_history* find_history(std::string_view op);

/// Every history, sorted by op name (for tests).
[[nodiscard]] std::span<const op_history> all_histories();

/// The definition in force at `opset`, or null when the op did not exist yet.
[[nodiscard]] const definition* definition_at(const op_history& h, std::int64_t opset);

}  // namespace inferopt::ir::opset
