#pragma once
// The nodes of a decomposed normalization that square activations and sum the squares
// (LayerNorm, RMSNorm and L2 norms written out by an exporter), which to-fp16 keeps float32.

#include <set>

#include "inferopt/ir/graph.hpp"

namespace inferopt::quant::detail {

/// Every node that squares a value (Pow with a constant exponent of 2, Mul(x, x),
/// ReduceSumSquare, ReduceL2), and, from each, the chain of sole readers among ReduceMean,
/// ReduceSum, Add and Sqrt up to the first Sqrt: a square of |x| > 256, and so a variance
/// sum, overflows float16 (largest finite 65504), while the standard deviation fits.
[[nodiscard]] std::set<const ir::node*> squared_statistics(const ir::graph& g, std::int64_t ir_version);

}  // namespace inferopt::quant::detail
