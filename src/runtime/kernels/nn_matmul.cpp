// MatMul (numpy semantics: 1-D operands, broadcast batch dims) and Gemm (transA/transB,
// alpha, beta, optional unidirectionally broadcast C), float32 and float64, on nn::gemm.
//
// MatMul folds A's batch dims into its rows when B has none (one [batch*M, K] x [K, N]
// product: the usual x * W of a linear layer); otherwise one product per output batch entry,
// run side by side on one thread each when they are small. Gemm writes beta*C into Y first
// and lets the product accumulate onto it. com.microsoft FusedGemm is Gemm plus an activation
// (nn_epilogue.hpp): it runs the product in blocks of rows, each written (beta*C), multiplied
// and activated before the next, so the activation finds its block in cache. A constant float
// matrix B (a linear layer's weights) is prepacked once (nn_constant_product.hpp) and its
// product, bias row included, computed on it.
// Error bound: that of nn::gemm with the reduction length K.

#include <algorithm>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "nn_constant_product.hpp"
#include "nn_gemm.hpp"
#include "nn_matmul_layout.hpp"

namespace inferopt::runtime::nn {

namespace {

constexpr std::int64_t small_gemm_flops = std::int64_t{1} << 22;

void check_float(const kernel_context& ctx, std::size_t inputs) {
  require_floating(ctx);
  const data_type t = ctx.input(0).dtype();
  for (std::size_t i = 1; i < inputs; ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != t) {
      ctx.fail("input " + std::to_string(i) + " is " + std::string(ir::to_string(ctx.input(i).dtype())) +
               ", input 0 is " + std::string(ir::to_string(t)));
    }
  }
}

class matmul_kernel final : public kernel {
 public:
  explicit matmul_kernel(const kernel_build_info& info) { use_constant_weights(weights_, info.node, 1); }

  void compute(kernel_context& ctx) override {
    check_float(ctx, 2);
    if (ctx.input(0).dtype() == data_type::float32) run<float>(ctx);
    else run<double>(ctx);
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& a = ctx.input(0);
    const tensor& b = weights_.operand(ctx, 1);
    const matmul_layout l = layout_matmul(ctx, a, b);
    tensor& y = ctx.allocate_output(0, a.dtype(), l.out_shape);
    if (y.element_count() == 0) return;

    const T* ad = a.data<T>();
    const T* bd = b.data<T>();
    T* yd = y.mutable_data<T>();
    const int threads = ctx.threads();
    const std::int64_t m = l.m, k = l.k, n = l.n;
    gemm_args<T> g;
    g.n = n;
    g.k = k;
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    if (l.folds_rows) {
      g.m = l.count() * m;
      if constexpr (std::is_same_v<T, float>) {
        if (b.rank() == 2 && weights_.run(bd, ad, g.m, nullptr, yd, threads)) return;
        if (!bd) bd = weights_.plain();  // released to the product's copy
      }
      g.a = ad;
      g.b = bd;
      g.c = yd;
      gemm(g, threads);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (!bd) bd = weights_.plain();
    }
    const std::int64_t count = l.count();
    g.m = m;
    auto one = [&](std::int64_t index, int inner_threads) {
      const auto [oa, ob] = l.operands(index);
      gemm_args<T> local = g;
      local.a = ad + oa * m * k;
      local.b = bd + ob * k * n;
      local.c = yd + index * m * n;
      gemm(local, inner_threads);
    };
    if (threads > 1 && count > 1 && 2 * m * n * k < small_gemm_flops) {
      detail::parallel_for(threads, count, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) one(i, 1);
      });
    } else {
      for (std::int64_t i = 0; i < count; ++i) one(i, threads);
    }
  }

  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return input == 1 && weights_.holds_copy(); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.own_bytes(); }

  constant_weight_product weights_;  // B, when it is a float matrix initializer
};

class gemm_kernel final : public kernel {
 public:
  gemm_kernel(const kernel_build_info& info, activation_spec act = {})
      : trans_a_(info.node.attr_int("transA", 0) != 0),
        trans_b_(info.node.attr_int("transB", 0) != 0),
        alpha_(info.node.attr_float("alpha", 1.0f)),
        beta_(info.node.attr_float("beta", 1.0f)),
        act_(act) {
    if (!trans_a_ && alpha_ == 1.0f) use_constant_weights(weights_, info.node, 1, trans_b_);
  }

  void compute(kernel_context& ctx) override {
    check_float(ctx, 3);
    if (ctx.input(0).dtype() == data_type::float32) run<float>(ctx);
    else run<double>(ctx);
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& a = ctx.input(0);
    const tensor& b = weights_.operand(ctx, 1);
    if (a.rank() != 2 || b.rank() != 2) {
      ctx.fail("A and B must be matrices, got shapes " + to_string(a.shape()) + " and " + to_string(b.shape()));
    }
    const std::int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    const std::int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    if (k != kb) {
      ctx.fail("A of shape " + to_string(a.shape()) + (trans_a_ ? " (transposed)" : "") + " and B of shape " +
               to_string(b.shape()) + (trans_b_ ? " (transposed)" : "") + " cannot be multiplied");
    }
    tensor& y = ctx.allocate_output(0, a.dtype(), {m, n});
    if (y.element_count() == 0) return;
    T* yd = y.mutable_data<T>();
    const bool with_c = ctx.has_input(2) && beta_ != 0.0f;
    if (with_c) check_c(ctx, ctx.input(2), m, n);
    const T* bd = b.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (run_on_constant_weights(ctx, b, with_c, m, n, yd)) return;
      if (!bd) bd = weights_.plain();  // released to the product's copy
    }
    gemm_args<T> g;
    g.n = n;
    g.k = k;
    g.lda = a.dim(1);
    g.trans_a = trans_a_;
    g.b = bd;
    g.ldb = b.dim(1);
    g.trans_b = trans_b_;
    g.ldc = n;
    g.alpha = static_cast<T>(alpha_);
    g.beta = with_c ? T(1) : T(0);
    // Plain Gemm: one block. FusedGemm: blocks of about 64K outputs (256 KB of float, an L2's
    // worth), at least 32 rows so that each product still feeds Eigen's blocking.
    const bool fused = act_.kind != activation::identity;
    const std::int64_t block = fused ? std::max<std::int64_t>(32, (std::int64_t{1} << 16) / std::max<std::int64_t>(n, 1)) : m;
    for (std::int64_t i0 = 0; i0 < m; i0 += block) {
      const std::int64_t rows = std::min(block, m - i0);
      if (with_c) fill_scaled_c<T>(ctx.input(2), i0, rows, n, yd);
      g.m = rows;
      g.a = a.data<T>() + (trans_a_ ? i0 : i0 * g.lda);
      g.c = yd + i0 * n;
      gemm(g, ctx.threads());
      if (fused) activate(act_, g.c, rows * n);
    }
  }

  /// Y = act(A W + C) on the prepacked constant B (alpha 1, A not transposed), when C is absent
  /// or a bias row [n] / [1, n] with beta 1; false when that does not apply.
  bool run_on_constant_weights(const kernel_context& ctx, const tensor& b, bool with_c, std::int64_t m, std::int64_t n, float* y) {
    const float* bias = nullptr;
    if (with_c) {
      const tensor& c = ctx.input(2);
      const bool row = c.element_count() == n && (c.rank() == 1 || (c.rank() == 2 && c.dim(0) == 1));
      if (!row || beta_ != 1.0f || c.dtype() != data_type::float32) return false;
      bias = c.data<float>();
    }
    if (!weights_.run(b.raw(), ctx.input(0).data<float>(), m, bias, y, ctx.threads())) return false;
    if (act_.kind != activation::identity) activate(act_, y, m * n);
    return true;
  }

  /// Fails unless C is unidirectionally broadcastable to [m, n]: [], [n], [1,n], [m,1], [m,n], ...
  static void check_c(const kernel_context& ctx, const tensor& c, std::int64_t m, std::int64_t n) {
    const shape_t& s = c.shape();
    const std::int64_t cm = s.size() == 2 ? s[0] : 1, cn = s.empty() ? 1 : s.back();
    if (s.size() > 2 || (cm != 1 && cm != m) || (cn != 1 && cn != n)) {
      ctx.fail("C of shape " + to_string(s) + " does not broadcast to [" + std::to_string(m) + "," + std::to_string(n) + "]");
    }
  }

  /// Rows [i0, i0 + rows) of y = beta * C broadcast to [m, n] (checked by check_c).
  template <class T>
  void fill_scaled_c(const tensor& c, std::int64_t i0, std::int64_t rows, std::int64_t n, T* y) const {
    const shape_t& s = c.shape();
    const std::int64_t cm = s.size() == 2 ? s[0] : 1, cn = s.empty() ? 1 : s.back();
    const T* cd = c.data<T>();
    const T beta = static_cast<T>(beta_);
    for (std::int64_t i = i0; i < i0 + rows; ++i) {
      const T* row = cd + (cm == 1 ? 0 : i * cn);
      T* out = y + i * n;
      if (cn == 1) std::fill(out, out + n, beta * row[0]);
      else for (std::int64_t j = 0; j < n; ++j) out[j] = beta * row[j];
    }
  }

  bool trans_a_, trans_b_;
  float alpha_, beta_;
  activation_spec act_;  // identity for Gemm
  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return input == 1 && weights_.holds_copy(); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.own_bytes(); }

  constant_weight_product weights_;  // B, when it is a float matrix initializer
};

}  // namespace

void register_matmul_kernels(kernel_registry& r) {
  r.add("", "MatMul", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<matmul_kernel>(info);
  });
  r.add("", "Gemm", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<gemm_kernel>(info);
  });
  r.add("com.microsoft", "FusedGemm", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<gemm_kernel>(info, fused_gemm_activation(info));
  });
}

}  // namespace inferopt::runtime::nn
