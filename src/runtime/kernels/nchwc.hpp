#pragma once
// The executor's blocked channel layout (private to src/runtime): a float [N, C, H, W]
// activation held as [N, ceil(C/b), H, W, b], b channels innermost (oneDNN's nChw16c on
// AVX-512, nChw8c on AVX2), so that convolutions run oneDNN's JIT kernels on it directly.
// The session converts chains of Conv, pools and elementwise ops to ops of the internal domain
// `inferopt.nchwc` when it builds its own copy of the graph (blocked_layout.hpp); saved models
// never contain them.
//
// Channels past C in the last block are padding. Convolutions read them against zero weights
// and pools and elementwise ops keep them per channel, so they never reach a real channel;
// ReorderOutput drops them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "inferopt/runtime/kernel.hpp"

namespace inferopt::ir {
class node;
}

namespace inferopt::runtime::nn {

inline constexpr const char* nchwc_domain = "inferopt.nchwc";

/// The channel block on this CPU: 16 with AVX-512, 8 with AVX2, 0 when the blocked layout is
/// off (no oneDNN in the build, INFEROPT_NN_ISA=generic, INFEROPT_NN_GEMM=eigen or
/// INFEROPT_LAYOUT=plain). Decided once per process.
[[nodiscard]] int nchwc_block() noexcept;

/// Whether oneDNN runs `conv` (Conv or com.microsoft FusedConv with constant float weights,
/// 2 spatial dims) with a JIT kernel on blocked activations, its input blocked (or plain
/// NCHW when `plain_input`), for an input of `x_shape` ([N, C, H, W]; dims unknown before a
/// run are given as representative values).
[[nodiscard]] bool nchwc_conv_runs(const ir::node& conv, const std::vector<std::int64_t>& x_shape, bool plain_input,
                                   int block);

/// The input whose memory output 0 of `n` may take (an in-place write), when `n` is a blocked
/// Conv with a residual Z: oneDNN's sum post-op adds the product to what Y holds, so Y
/// written over a Z that dies at `n` spares copying Z into Y first. None when Z is also X,
/// which the conv reads all along, or for any other node.
[[nodiscard]] std::optional<std::size_t> blocked_conv_in_place_input(const ir::node& n);

/// inferopt.nchwc Conv, MaxPool, AveragePool, GlobalAveragePool, ChannelScale, GatherChannels,
/// ReorderInput, ReorderOutput.
void register_nchwc_kernels(kernel_registry& r);

}  // namespace inferopt::runtime::nn
