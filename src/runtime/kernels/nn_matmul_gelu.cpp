// inferopt.cpu MatMulGelu: Y = gelu(A W + bias), the first half of a transformer's FFN, which
// the session folds from MatMul followed by Gelu, BiasGelu or FastGelu (linear_gelu.hpp).
// Inputs: A [..., K] float32, W [K, N] a constant initializer, bias [N] (optional). Attribute
// approximate: "none" (erf GELU) or "tanh". Output: Y [..., N].
// With oneDNN the GELU is the matmul's eltwise post-op on prepacked weights
// (nn_constant_product.hpp), applied while each output tile is in cache instead of in a second
// pass over the [rows, N] activations; otherwise nn::gemm, then the GELU row by row.
// Error bound: that of nn::gemm with reduction length K, plus the GELU's (oneDNN's erf and tanh
// fits, or vector_math.hpp's erfc: a few 1e-7 relative).
#include <cmath>
#include <numbers>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "nn_constant_product.hpp"
#include "nn_gemm.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

/// y[0, n) = tanh-approximated GELU of y + bias (bias may be null), in place.
void gelu_tanh_row(float* y, const float* bias, std::int64_t n) {
  const float k = static_cast<float>(2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // 2 sqrt(2 / pi)
  for (std::int64_t j = 0; j < n; ++j) {
    const float v = y[j] + (bias ? bias[j] : 0.0f);
    y[j] = v / (1.0f + std::exp(-k * (v + 0.044715f * v * v * v)));
  }
}

class matmul_gelu_kernel final : public kernel {
 public:
  explicit matmul_gelu_kernel(const kernel_build_info& info) {
    const std::string mode = info.node.attr_string("approximate", "none");
    if (mode != "none" && mode != "tanh") info.fail("approximate must be 'none' or 'tanh', got '" + mode + "'");
    act_ = mode == "tanh" ? linear_activation::gelu_tanh : linear_activation::gelu_erf;
    use_constant_weights(weights_, info.node, 1);
  }

  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return input == 1 && weights_.holds_copy(); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.own_bytes(); }

  void compute(kernel_context& ctx) override {
    const tensor& a = ctx.input(0);
    const tensor& w = weights_.operand(ctx, 1);
    if (a.dtype() != data_type::float32 || w.dtype() != data_type::float32 || a.rank() < 1 || w.rank() != 2) {
      ctx.fail("A must be float32 [..., K] and W float32 [K, N]");
    }
    const std::int64_t k = w.dim(0), n = w.dim(1);
    if (a.shape().back() != k) ctx.fail("A's last dim " + std::to_string(a.shape().back()) + " is not W's " + std::to_string(k));
    const float* bias = nullptr;
    if (ctx.has_input(2)) {
      if (ctx.input(2).dtype() != data_type::float32 || ctx.input(2).element_count() != n) ctx.fail("bias must be " + std::to_string(n) + " floats");
      bias = ctx.input(2).data<float>();
    }
    shape_t y_shape = a.shape();
    y_shape.back() = n;
    tensor& y = ctx.allocate_output(0, data_type::float32, y_shape);
    const std::int64_t rows = k > 0 ? a.element_count() / k : 0;
    if (y.element_count() == 0) return;
    float* yd = y.mutable_data<float>();
    if (weights_.run(w.raw(), a.data<float>(), rows, bias, yd, ctx.threads(), act_)) return;
    gemm_args<float> g;
    g.m = rows;
    g.n = n;
    g.k = k;
    g.a = a.data<float>();
    g.lda = k;
    g.b = w.raw() ? w.data<float>() : weights_.plain();  // released to the product's copy
    g.ldb = n;
    g.c = yd;
    g.ldc = n;
    gemm(g, ctx.threads());
    detail::parallel_for(ctx.threads(), rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t r = begin; r < end; ++r) {
                             if (act_ == linear_activation::gelu_erf) gelu_erf(yd + r * n, bias, yd + r * n, n);
                             else gelu_tanh_row(yd + r * n, bias, n);
                           }
                         });
  }

 private:
  linear_activation act_ = linear_activation::gelu_erf;
  constant_weight_product weights_;
};

}  // namespace

void register_matmul_gelu_kernels(kernel_registry& r) {
  r.add(executor_fused_domain, "MatMulGelu", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<matmul_gelu_kernel>(info);
  });
}

}  // namespace inferopt::runtime::nn
