#pragma once
// Folds the GELU after a linear layer into the layer, in the session's own copy of a graph:
// MatMul(A, W) with W a constant float32 matrix, read only by com.microsoft Gelu, BiasGelu
// (constant bias) or FastGelu (constant bias or none), or ai.onnx Gelu, becomes one
// inferopt.cpu MatMulGelu (kernels/nn_matmul_gelu.cpp), whose GELU oneDNN applies to each
// output tile while it is in cache. Transformer FFNs and ConvNeXt's MLPs have this shape; the
// GELU pass over the [tokens, 4 x hidden] activations was 5-15% of their time. The fused node
// keeps the MatMul's label, so per-node profiles still name it.
#include "inferopt/ir/fwd.hpp"

namespace inferopt::runtime::detail {

/// Rewrites `g` in place; returns the number of layers fused.
int fuse_linear_gelu(ir::graph& g);

}  // namespace inferopt::runtime::detail
