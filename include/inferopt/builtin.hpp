#pragma once
/// The built-in registry: every module's passes and the -O levels. It sits above the modules
/// (library `inferopt::builtin`), so the pass layer stays below every module whose passes it
/// runs.

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// The -O levels as named pipelines `O0`..`O3`. Needs the passes they name registered.
///   O0: nothing.
///   O1: constant folding and cleanups to a fixpoint (standard ONNX only).
///   O2: shape inference, then O1's cleanups and the fusions that stay in the default ONNX
///       domain (Conv+BN, Conv+Mul/Add, BN into Gemm, MatMul+Add, Gemm transposes, Pad into
///       Conv, no-ops, consecutive Transposes/Reshapes, common subexpressions) to a fixpoint.
///   O3: O2 plus com.microsoft FusedConv/FusedGemm with their activations (non-standard ops
///       that ONNX Runtime runs).
void register_levels(pass_registry& registry);

/// A registry with every built-in pass (cleanups, fusion, quant, sparse) and the -O levels.
[[nodiscard]] pass_registry builtin_registry();

}  // namespace inferopt
