#pragma once
/// Adding the fusion passes to a registry.

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// Registers every fusion pass (`fuse-*`) and the graph cleanups that reach a fixpoint with
/// them. Each pass is declared in its own header under `inferopt/fusion/`.
void register_fusion_passes(pass_registry& registry);

}  // namespace inferopt
