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

const char* vector_math_isa() noexcept { return chosen().isa; }

}  // namespace inferopt::runtime::nn
