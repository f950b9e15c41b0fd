// Chooses the vector math build once per process (isa_choice.hpp).
#include "vector_math.hpp"

#include "isa_choice.hpp"

namespace inferopt::runtime::nn {

namespace {

const vector_math_config& chosen() noexcept {
  static const vector_math_config& config =
      choose_isa_build(vector_math_generic::config(), vector_math_avx2::config(), vector_math_avx512::config());
  return config;
}

}  // namespace

void gelu_erf(const float* x, const float* bias, float* y, std::int64_t n) noexcept { chosen().gelu_erf(x, bias, y, n); }

void softmax_rows(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld) noexcept {
  chosen().softmax_rows(s, rows, cols, ld);
}

void requantized_sum(const std::uint8_t* a, const std::uint8_t* b, std::uint8_t* y, std::int64_t n,
                     const requantize_sum_params& p) noexcept {
  chosen().requantized_sum_u8(a, b, y, n, p);
}

void requantized_sum(const std::int8_t* a, const std::int8_t* b, std::int8_t* y, std::int64_t n,
                     const requantize_sum_params& p) noexcept {
  chosen().requantized_sum_s8(a, b, y, n, p);
}

void normalize_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, const row_norm_params& p) noexcept {
  chosen().normalize_rows(x, y, rows, cols, p);
}

void swish(float* y, std::int64_t n) noexcept { chosen().swish(y, n); }

void block_channel_means(const float* in, std::int64_t size, std::int64_t block, float scale, float* out) noexcept {
  chosen().block_channel_means(in, size, block, scale, out);
}

void affine_block_channels(const float* x, const float* s, const float* bias, float* y, std::int64_t size,
                           std::int64_t block, bool relu) noexcept {
  chosen().affine_block_channels(x, s, bias, y, size, block, relu);
}

const char* vector_math_isa() noexcept { return chosen().isa; }

}  // namespace inferopt::runtime::nn
