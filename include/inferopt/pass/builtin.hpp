#pragma once
/// Filling a registry with inferopt's own passes and its -O levels.

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// dce, remove-unused, eliminate-identity, eliminate-dropout, fold-constants.
void register_cleanup_passes(pass_registry& registry);

/// The -O levels as named pipelines `O0`..`O3`. Needs the passes they name registered.
///   O0: nothing.
///   O1: constant folding and cleanups to a fixpoint (standard ONNX only).
///   O2: O1 plus fusions that stay in the default ONNX domain (fusions land with issue #4;
///       until then O2 equals O1).
///   O3: O2 plus fusions into com.microsoft ops such as FusedConv (likewise, today = O2).
void register_levels(pass_registry& registry);

/// A registry with every built-in pass and the -O levels.
[[nodiscard]] pass_registry builtin_registry();

}  // namespace inferopt
