#pragma once
/// Filling a registry with the pass module's own passes: the cleanups every -O level uses.

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// dce, remove-unused, eliminate-identity, eliminate-dropout, fold-constants, infer-shapes.
void register_cleanup_passes(pass_registry& registry);

}  // namespace inferopt
