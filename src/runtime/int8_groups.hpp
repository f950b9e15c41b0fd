#pragma once
// Runs a QDQ model's quantized groups on int8 kernels, in the session's own copy of a graph,
// the way onnxruntime's QDQ transformer forms QLinearConv and QLinearAdd (anchor: its
// qdq_transformer selectors), instead of dequantizing to float around every op:
// - DequantizeLinear(x) -> Conv(W = DequantizeLinear(int8 constant, zero point 0, per tensor
//   or per output channel), B = DequantizeLinear(int32 constant) or a float constant or none)
//   -> [Relu] -> QuantizeLinear becomes inferopt.cpu QLinearConvNhwc, where oneDNN runs it with
//   a JIT int8 kernel;
// - DequantizeLinear(a) + DequantizeLinear(b) -> [Relu] -> QuantizeLinear becomes QLinearAdd;
// - DequantizeLinear(x) -> MaxPool -> QuantizeLinear with the same scale and zero point becomes
//   MaxPoolNhwc;
// - DequantizeLinear(x) -> GlobalAveragePool (or an AveragePool over the whole static input,
//   unpadded) -> QuantizeLinear becomes QLinearGlobalAveragePoolNhwc.
// Scales and zero points must be constant scalars (per channel for the weights), activations
// uint8 or int8. The groups' int8 tensors are held channels-last ([N, H, W, C],
// kernels/int8_nhwc.hpp): a Transpose enters that layout where a chain starts and leaves it
// where a reader (a DequantizeLinear of the float part, a graph output) needs the model's
// layout, under the original name. What is left of the QDQ graph runs as before, except that a
// DequantizeLinear of a constant (a weight no int8 kernel took) is folded into a float
// constant once instead of on every run.
#include <cstdint>

#include "inferopt/ir/fwd.hpp"

namespace inferopt::runtime::detail {

/// Rewrites `g` in place; returns the number of int8 nodes it added (0: the graph uses no
/// executor op, though constants may have been folded).
/// `opset`: the model's default-domain opset (DequantizeLinear's constants are folded by its kernel).
int use_int8_kernels(ir::graph& g, std::int64_t opset);

}  // namespace inferopt::runtime::detail
