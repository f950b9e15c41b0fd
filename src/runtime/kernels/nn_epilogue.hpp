#pragma once
// What the conv and GEMM kernels apply to an output tile once its product is complete, while
// the tile is still in cache (private to src/runtime/kernels): the residual Z of
// com.microsoft FusedConv (added with the bias, before the product accumulates) and an
// activation (after it). Plain Conv and Gemm pass no epilogue and pay one null check per tile.
//
// The activations and their parameters are those ONNX Runtime's FusedConv/FusedGemm accept
// (docs/FUSED_OPS.md): Relu, LeakyRelu(alpha), Tanh, Sigmoid, Clip(min, max),
// HardSigmoid(alpha, beta) and HardSwish (FusedConv only).
// Error bound: Tanh and Sigmoid use the C library's tanh/exp (a few ulps); the others are
// exact in the output type.

#include <cstdint>

namespace inferopt::runtime::nn {

enum class activation { identity, relu, leaky_relu, tanh, sigmoid, clip, hard_sigmoid, hard_swish };

/// An activation and its parameters (alpha: LeakyRelu slope, Clip min, HardSigmoid alpha;
/// beta: Clip max, HardSigmoid beta).
struct activation_spec {
  activation kind = activation::identity;
  float alpha = 0.0f;
  float beta = 0.0f;
};

/// The epilogue of one product C[rows x cols] (row-major, leading dim ldc): C += residual
/// before the activation. `residual` has C's layout with leading dim `ldr`; null when none.
template <class T>
struct epilogue {
  activation_spec act;
  const T* residual = nullptr;
  std::int64_t ldr = 0;
};

/// Applies `a` to x[0, n) in place. Not inline: the ISA builds of the GEMM call this one
/// baseline copy instead of instantiating math functions with their own flags (this header
/// includes nothing but <cstdint> so that nn_gemm_body.hpp may include it).
void activate(const activation_spec& a, float* x, std::int64_t n) noexcept;
void activate(const activation_spec& a, double* x, std::int64_t n) noexcept;

}  // namespace inferopt::runtime::nn
