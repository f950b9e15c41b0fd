#pragma once
// Loops whose speed is their instruction set's: the erf GELU, swish, attention's row softmax, layer
// normalization's rows, the blocked channel means and scales and the int8 requantized sum, private to src/runtime/kernels. They are Eigen array expressions, and Eigen picks
// its packet width at compile time, so the same body (vector_math_body.hpp) is compiled once
// per instruction set (vector_math_{generic,avx2,avx512}.cpp), like the nn GEMM (nn_gemm.hpp
// says why function attributes would not do), and the widest build the CPU runs serves
// (isa_choice.hpp). The generic (SSE2) build of the GELU ran BERT-base's BiasGelu at about
// 5 ns an element, twice onnxruntime's time.
#include <cstdint>

namespace inferopt::runtime::nn {

/// The erf GELU of x + bias: y[i] = v Phi(v) with v = x[i] + bias[i] (bias null: v = x[i]), and
/// Phi(v) = 0.5 erfc(|v| / sqrt 2) below 0 and 1 - that above (no cancellation for negative v).
/// erfc is Numerical Recipes' erfcc, a Chebyshev fit good to 1.2e-7 relative; float rounding
/// of its exponent -v^2/2 adds up to about v^2 ulp (the tests allow 4e-7 + 2e-7 v^2). y may be x.
void gelu_erf(const float* x, const float* bias, float* y, std::int64_t n) noexcept;

/// Each of `rows` rows of `cols` entries (leading dim ld) to its softmax, in place. A row of
/// -inf gives NaN. Entries more than about 85 below the row's maximum (exp below 1e-37) become
/// exactly 0 instead of the denormal exp would give: denormal probabilities slow the next
/// product several times over, and masked keys (at -inf or -FLT_MAX) are all such entries.
void softmax_rows(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld) noexcept;

/// What a requantized sum of two int8 tensors computes: y = clamp(round_half_even(a_ratio a +
/// b_ratio b + offset), lowest, highest), with the ratios a's and b's scale over y's, the
/// offset folding the three zero points, and `lowest` the type's minimum (or y's zero point
/// for a fused Relu).
struct requantize_sum_params {
  float a_ratio, b_ratio, offset, lowest, highest;
};

/// y[i] = the requantized sum of a[i] and b[i] (QLinearAdd); y may be a or b.
void requantized_sum(const std::uint8_t* a, const std::uint8_t* b, std::uint8_t* y, std::int64_t n,
                     const requantize_sum_params& p) noexcept;
void requantized_sum(const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n,
                     const requantize_sum_params& p) noexcept;

/// What normalize_rows applies: per-column scale (required) and bias (null: none), and
/// whether it is RMS normalization (no mean subtracted). mean and inv_std, when not null,
/// receive each row's statistics (mean stays 0 for RMS).
struct row_norm_params {
  const float* scale;
  const float* bias;
  float epsilon;
  bool rms;
  float* mean;
  float* inv_std;
};

/// Layer (or RMS) normalization of `rows` rows of `cols` floats: y = (x - mean) / sqrt(var +
/// eps) * scale + bias, with mean and the (biased) variance of each row summed in float
/// vector lanes, two passes (the variance from the centred values). y may be x.
void normalize_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, const row_norm_params& p) noexcept;

/// y[i] = y[i] * sigmoid(y[i]) (SiLU), in place. sigmoid is Eigen's rational fit, good to about
/// 1e-7 absolute (not relative: 1e-4 of it at -8), and exp below -9.
void swish(float* y, std::int64_t n) noexcept;

/// For one plane of a blocked tensor (nchwc.hpp: `size` positions of `block` channels, block
/// 8 or 16): out[b] = scale * the sum of in[pos * block + b] over the positions, summed in
/// four interleaved float partial sums.
void block_channel_means(const float* in, std::int64_t size, std::int64_t block, float scale, float* out) noexcept;

/// For one plane of a blocked tensor: y[pos * block + b] = x[pos * block + b] * s[b] + bias[b],
/// then max(0, y) when `relu`; a null bias adds nothing. y may be x.
void affine_block_channels(const float* x, const float* s, const float* bias, float* y, std::int64_t size,
                           std::int64_t block, bool relu) noexcept;

/// The instruction set of the build that serves: "avx512", "avx2" or "generic".
[[nodiscard]] const char* vector_math_isa() noexcept;

// One instruction-set build: its name and entry points (the signatures above).
struct vector_math_config {
  const char* isa;
  void (*gelu_erf)(const float* x, const float* bias, float* y, std::int64_t n) noexcept;
  void (*softmax_rows)(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld) noexcept;
  void (*requantized_sum_u8)(const std::uint8_t* a, const std::uint8_t* b, std::uint8_t* y, std::int64_t n,
                             const requantize_sum_params& p) noexcept;
  void (*requantized_sum_s8)(const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n,
                             const requantize_sum_params& p) noexcept;
  void (*normalize_rows)(const float* x, float* y, std::int64_t rows, std::int64_t cols, const row_norm_params& p) noexcept;
  void (*swish)(float* y, std::int64_t n) noexcept;
  void (*block_channel_means)(const float* in, std::int64_t size, std::int64_t block, float scale, float* out) noexcept;
  void (*affine_block_channels)(const float* x, const float* s, const float* bias, float* y, std::int64_t size,
                                std::int64_t block, bool relu) noexcept;
};

// Null when the file was compiled without its instruction-set flags; generic is always there.
namespace vector_math_generic {
[[nodiscard]] const vector_math_config* config() noexcept;
}
namespace vector_math_avx2 {
[[nodiscard]] const vector_math_config* config() noexcept;
}
namespace vector_math_avx512 {
[[nodiscard]] const vector_math_config* config() noexcept;
}

}  // namespace inferopt::runtime::nn
