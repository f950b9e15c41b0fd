#pragma once
// Converts the session's own copy of a graph to the blocked channel layout where oneDNN's
// convolutions run faster on it (kernels/nchwc.hpp), the way onnxruntime's NCHWc transformer
// does for MLAS: each Conv / FusedConv becomes inferopt.nchwc Conv, and pools and elementwise
// ops whose operands are all blocked stay blocked, so activations are reordered only where a
// chain starts (ReorderInput) and where a consumer, or a graph output, needs NCHW
// (ReorderOutput, which then defines the original value under its name).
//
// Converted: Conv and com.microsoft FusedConv with 4-D float input and 4-D float32 weights
// from an initializer (old models list them as graph inputs too) that oneDNN runs with a JIT
// kernel; MaxPool, AveragePool and GlobalAveragePool of a
// blocked input; Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Clip and Add, Sub,
// Mul whose tensor operands are all blocked with the same channel count (scalar constants
// allowed); a Mul by a per-channel scale that is 1 x 1 by construction (squeeze-excitation:
// GlobalAveragePool, then 1x1 convs and elementwise ops) becomes inferopt.nchwc ChannelScale,
// and so does a BatchNormalization with constant parameters (with the Relu after it);
// Concat, Slice and Split along the channels of blocked inputs and the Reshape-Transpose-
// Reshape channel shuffle become inferopt.nchwc GatherChannels, composed into one copy.
// Every other op reads NCHW. The converted nodes keep the original node's label, so
// per-node profiles still name them.
#include "inferopt/ir/fwd.hpp"

namespace inferopt::runtime::detail {

/// Rewrites `g` in place for the CPU's widest channel block `block` (16 or 8; 8 also on
/// AVX-512 where it lets oneDNN run more of the convolutions); returns the number of nodes
/// it added (0: the graph is unchanged and uses no inferopt.nchwc op). With `winograd`, the
/// convs it fits are marked for the Winograd kernel (session_options::winograd).
int use_blocked_layout(ir::graph& g, int block, bool winograd);

}  // namespace inferopt::runtime::detail
