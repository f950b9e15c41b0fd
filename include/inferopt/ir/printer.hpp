#pragma once
/// A compact text form of graphs, for `--print-after-change` and debugging.

#include <string>

#include "inferopt/ir/graph.hpp"

namespace inferopt::ir {

/// One line per node: `%out = Op(%in, ...) {attr=value, ...}`, nested graphs indented.
[[nodiscard]] std::string to_text(const graph& g);

}  // namespace inferopt::ir
