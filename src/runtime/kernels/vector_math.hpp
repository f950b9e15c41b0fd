#pragma once
// Float32 loops whose speed is their instruction set's: the erf GELU and attention's row
// softmax, private to src/runtime/kernels. They are Eigen array expressions, and Eigen picks
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

/// The instruction set of the build that serves: "avx512", "avx2" or "generic".
[[nodiscard]] const char* vector_math_isa() noexcept;

// One instruction-set build: its name and entry points (the signatures above).
struct vector_math_config {
  const char* isa;
  void (*gelu_erf)(const float* x, const float* bias, float* y, std::int64_t n) noexcept;
  void (*softmax_rows)(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld) noexcept;
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
