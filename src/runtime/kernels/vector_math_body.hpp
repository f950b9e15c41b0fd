// The vector math body, compiled once per instruction set by vector_math_{generic,avx2,
// avx512}.cpp: include it only from those, after defining INFEROPT_VECTOR_MATH_ISA (the
// build's namespace), INFEROPT_VECTOR_MATH_NAME and, for the ISA builds, `Eigen` as a renamed
// namespace. As in nn_gemm_body.hpp, everything but config() has internal linkage and no
// template is shared with other files, so the linker cannot hand one build another's code.

#include <algorithm>
#include <cmath>

#include <Eigen/Core>

#include "vector_math.hpp"

namespace inferopt::runtime::nn::INFEROPT_VECTOR_MATH_ISA {

namespace {

// Chunks of this many floats: the temporaries of one chunk stay in L1, on the stack.
constexpr Eigen::Index chunk = 256;
using chunk_array = Eigen::Array<float, Eigen::Dynamic, 1, Eigen::ColMajor, chunk, 1>;
using const_span = Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, 1>>;
using span = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>>;

void gelu_chunk(const float* x, const float* bias, float* y, Eigen::Index m) {
  const chunk_array v = bias ? chunk_array(const_span(x, m) + const_span(bias, m)) : chunk_array(const_span(x, m));
  // h = 0.5 erfc(|v| / sqrt 2) (erfcc: u = 1 / (1 + z / 2), h = u/2 exp(-z^2 - 1.26551223 + u p(u))).
  const chunk_array z = v.abs() * 0.70710678118654752f;
  const chunk_array u = (1.0f + 0.5f * z).inverse();
  static constexpr float coefficients[] = {-0.82215223f, 1.48851587f,  -1.13520398f, 0.27886807f,
                                          -0.18628806f, 0.09678418f, 0.37409196f,  1.00002368f};
  chunk_array p = chunk_array::Constant(m, 0.17087277f);
  for (const float c : coefficients) p = c + u * p;
  const chunk_array h = 0.5f * u * (-z * z - 1.26551223f + u * p).exp();
  // v Phi(v): Phi is 1 - h above 0 and h elsewhere; arithmetic, not a select, so it vectorizes.
  span(y, m) = v * (h + (v > 0.0f).cast<float>() * (1.0f - 2.0f * h));
}

void gelu_erf(const float* x, const float* bias, float* y, std::int64_t n) noexcept {
  for (std::int64_t k = 0; k < n; k += chunk) {
    const Eigen::Index m = static_cast<Eigen::Index>(n - k < chunk ? n - k : chunk);
    gelu_chunk(x + k, bias ? bias + k : nullptr, y + k, m);
  }
}

void softmax_rows(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld) noexcept {
  // The clamp keeps exp's results normal (exp(-87) is just above FLT_MIN); what is below
  // 1e-37 of the row's maximum then becomes 0. The cut is not exp(-87) itself: the vectorized
  // exp may round it an ulp above a scalar one, and one survivor brings the denormals back.
  // exp runs on fixed 16-value pieces read unaligned: over a whole row as one dynamic span,
  // Eigen leaves the values before the first aligned address and after the last to scalar
  // expf, which took a quarter of MiniLM's softmax time (the sum and the scaling below too). A row's last cols % 16 values go
  // through a padded 16-value array, so that they too take the vector exp.
  constexpr float underflow = -87.0f, negligible = 1e-37f;
  constexpr Eigen::Index lanes = 16;
  using piece = Eigen::Map<Eigen::Array<float, lanes, 1>>;
  const auto n = static_cast<Eigen::Index>(cols), full = n / lanes * lanes;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* p = s + r * ld;
    span row(p, n);
    const float top = row.maxCoeff();
    for (Eigen::Index j = 0; j < full; j += lanes) {
      piece values(p + j);
      values = (values - top).max(underflow).exp();
    }
    if (full < n) {
      Eigen::Array<float, lanes, 1> tail = Eigen::Array<float, lanes, 1>::Constant(top);
      std::copy(p + full, p + n, tail.data());
      tail = (tail - top).max(underflow).exp();
      std::copy(tail.data(), tail.data() + (n - full), p + full);
    }
    for (std::int64_t j = 0; j < cols; ++j) p[j] = p[j] >= negligible ? p[j] : 0.0f;
    // One reciprocal, then products: a vector divide per 16 values was the loop's bottleneck.
    Eigen::Array<float, lanes, 1> partial = Eigen::Array<float, lanes, 1>::Zero();
    for (Eigen::Index j = 0; j < full; j += lanes) partial += piece(p + j);
    float sum = partial.sum();
    for (Eigen::Index j = full; j < n; ++j) sum += p[j];
    const float inverse = 1.0f / sum;
    for (Eigen::Index j = 0; j < full; j += lanes) piece(p + j) *= inverse;
    for (Eigen::Index j = full; j < n; ++j) p[j] *= inverse;
  }
}

// A plain loop: the compiler vectorizes the widening, the fma and nearbyint (vrndscaleps on
// AVX-512) itself, which Eigen's packet casts do not for 8-bit types.
template <class T>
void requantized_sum(const T* a, const T* b, T* y, std::int64_t n, const requantize_sum_params& p) noexcept {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = p.a_ratio * static_cast<float>(a[i]) + p.b_ratio * static_cast<float>(b[i]) + p.offset;
    y[i] = static_cast<T>(static_cast<int>(std::nearbyint(std::min(std::max(v, p.lowest), p.highest))));
  }
}

void normalize_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, const row_norm_params& p) noexcept {
  const auto n = static_cast<Eigen::Index>(cols);
  const const_span scale(p.scale, n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const const_span row(x + r * cols, n);
    const float mean = p.rms || n == 0 ? 0.0f : row.sum() / static_cast<float>(n);
    const float var = n == 0 ? 0.0f : (row - mean).square().sum() / static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(var + p.epsilon);
    if (p.mean) p.mean[r] = mean;
    if (p.inv_std) p.inv_std[r] = inv;
    span out(y + r * cols, n);
    if (p.bias) {
      out = (row - mean) * inv * scale + const_span(p.bias, n);
    } else {
      out = (row - mean) * inv * scale;
    }
  }
}

void swish(float* y, std::int64_t n) noexcept {
  for (std::int64_t k = 0; k < n; k += chunk) {
    span v(y + k, static_cast<Eigen::Index>(n - k < chunk ? n - k : chunk));
    v = v * v.logistic();
  }
}

// The blocked loops below take the block as a template argument: with 16 (or 8) known, one
// position's channels are one vector register, and four accumulators hide the add latency.
template <int Block>
void block_means(const float* in, std::int64_t size, float scale, float* out) noexcept {
  float acc[4][Block] = {};
  std::int64_t pos = 0;
  for (; pos + 4 <= size; pos += 4) {
    for (int u = 0; u < 4; ++u) {
      for (int b = 0; b < Block; ++b) acc[u][b] += in[(pos + u) * Block + b];
    }
  }
  for (; pos < size; ++pos) {
    for (int b = 0; b < Block; ++b) acc[0][b] += in[pos * Block + b];
  }
  for (int b = 0; b < Block; ++b) out[b] = ((acc[0][b] + acc[1][b]) + (acc[2][b] + acc[3][b])) * scale;
}

void block_channel_means(const float* in, std::int64_t size, std::int64_t block, float scale, float* out) noexcept {
  if (block == 16) return block_means<16>(in, size, scale, out);
  block_means<8>(in, size, scale, out);
}

template <int Block, bool Bias, bool Relu>
void affine_blocks(const float* x, const float* s, const float* bias, float* y, std::int64_t size) noexcept {
  for (std::int64_t pos = 0; pos < size; ++pos) {
    for (int b = 0; b < Block; ++b) {
      float v = x[pos * Block + b] * s[b];
      if constexpr (Bias) v += bias[b];
      if constexpr (Relu) v = v > 0.0f ? v : 0.0f;
      y[pos * Block + b] = v;
    }
  }
}

template <int Block>
void affine_blocks_of(const float* x, const float* s, const float* bias, float* y, std::int64_t size, bool relu) noexcept {
  if (bias && relu) return affine_blocks<Block, true, true>(x, s, bias, y, size);
  if (bias) return affine_blocks<Block, true, false>(x, s, bias, y, size);
  if (relu) return affine_blocks<Block, false, true>(x, s, bias, y, size);
  affine_blocks<Block, false, false>(x, s, bias, y, size);
}

void affine_block_channels(const float* x, const float* s, const float* bias, float* y, std::int64_t size,
                           std::int64_t block, bool relu) noexcept {
  if (block == 16) return affine_blocks_of<16>(x, s, bias, y, size, relu);
  affine_blocks_of<8>(x, s, bias, y, size, relu);
}

constexpr vector_math_config build{INFEROPT_VECTOR_MATH_NAME, &gelu_erf, &softmax_rows, &requantized_sum<std::uint8_t>,
                                   &requantized_sum<std::int8_t>, &normalize_rows, &swish,
                                   &block_channel_means, &affine_block_channels};

}  // namespace

const vector_math_config* config() noexcept { return &build; }

}  // namespace inferopt::runtime::nn::INFEROPT_VECTOR_MATH_ISA
