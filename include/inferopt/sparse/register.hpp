#pragma once
/// Adding the sparse module's graph passes to a registry (ONNX builds only: the passes need
/// the IR, the rest of the module does not).

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// Registers `sparsify-blocks` (inferopt/sparse/sparsify_blocks.hpp). It changes the model's
/// numbers, so no -O level names it.
void register_sparse_passes(pass_registry& registry);

}  // namespace inferopt
