#pragma once
// Winograd F(2x2, 3x3) convolution for the nn Conv kernel (private to src/runtime/kernels).
//
// For 3x3 windows with stride 1, dilation 1 and one group, each 2x2 output tile is
// A^T [ (G g G^T) .* (B^T d B) ] A over a 4x4 input tile d: 16 multiplies per tile and input
// channel instead of 36. Summed over channels, the elementwise products become 16 GEMMs
// U_t[M x C] * V_t[C x tiles], which run on nn::gemm_packed with U_t (the transformed
// weights) packed when the session is built. Worth it when the map has enough tiles to keep
// the GEMMs efficient; see `winograd_applies`.
// Error bound: the transforms use only 0, +-1 and +-1/2, so the result differs from direct
// convolution by a few float32 ulps of the sum of |terms| (the conformance tolerance,
// rtol 1e-3, is orders of magnitude looser).

#include <cstdint>

#include "nn_common.hpp"

namespace inferopt::runtime::nn {

/// Whether the geometry suits F(2x2, 3x3) (2-D, 3x3, stride 1, dilation 1; the caller checks
/// one group) with enough output positions for the tile GEMMs to pay off.
[[nodiscard]] bool winograd_applies(const window_geometry& g);

/// Floats needed for the transformed, packed weights of an [M, C, 3, 3] convolution: 16
/// packed [M x C] matrices, one per position of the 4x4 tile.
[[nodiscard]] std::size_t winograd_packed_size(std::int64_t out_channels, std::int64_t in_channels);

/// Transforms and packs w [M, C, 3, 3] into `out` (64-byte aligned, winograd_packed_size
/// floats). Uses this thread's scratch slot 0.
void winograd_pack(const float* w, std::int64_t out_channels, std::int64_t in_channels, float* out);

/// y[M, out...] = act(bias + residual + conv(x[C, in...])) for one image, with weights from
/// winograd_pack; `ep` (null: none) holds the residual [M, out...] of this image (channel
/// stride ep->ldr) and the activation, both applied in the output transform as each output
/// row is written. Uses this thread's scratch slots 0 and 1.
void winograd_conv(const float* packed, std::int64_t out_channels, std::int64_t in_channels, const float* x,
                   const window_geometry& g, const float* bias, const epilogue<float>* ep, float* y, int threads);

}  // namespace inferopt::runtime::nn
