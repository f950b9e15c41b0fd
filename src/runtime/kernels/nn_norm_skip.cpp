// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization (float32), as
// onnxruntime's contrib ops define them: per row of the last axis,
//
//   s = input + skip (+ bias),  y = (s - mean(s)) / sqrt(var(s) + eps) * gamma + beta
//   (the simplified form: y = s / sqrt(mean(s^2) + eps) * gamma)
//
// with input [B, S, D], skip [B, S, D], [1, S, D] or [S, D], gamma, beta and bias [D];
// output 3 (input_skip_bias_sum) returns s. Mean and inverse deviation (outputs 1 and 2) are
// training outputs and refused. Rows run in parallel; each sums into its row of s (output 3,
// or a scratch row), then normalizes with moments accumulated in double.

#include <cmath>
#include <vector>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {
namespace {

class skip_layer_norm_kernel final : public kernel {
 public:
  skip_layer_norm_kernel(const kernel_build_info& info, bool simplified)
      : epsilon_(info.node.attr_float("epsilon", 1e-12f)), simplified_(simplified) {
    for (std::size_t i = 1; i < 3 && i < info.node.outputs().size(); ++i) {
      if (info.node.output(i)) info.unsupported("the mean and inverse deviation outputs are not supported");
    }
  }

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& skip = ctx.input(1);
    const shape_t& xs = x.shape();
    if (x.rank() != 3 && x.rank() != 2) ctx.fail("input must have rank 3 (or 2), got " + to_string(xs));
    const std::int64_t d = xs.back(), rows = x.element_count() / std::max<std::int64_t>(d, 1);
    const std::int64_t tokens = skip_rows(ctx, xs, skip.shape(), rows);
    const std::size_t beta_index = simplified_ ? 0 : 3, bias_index = simplified_ ? 3 : 4;
    const float* gamma = vector_input(ctx, 2, d, "gamma");
    const float* beta = beta_index ? vector_input(ctx, beta_index, d, "beta") : nullptr;
    const float* bias = vector_input(ctx, bias_index, d, "bias");
    if (!gamma) ctx.fail("gamma is required");
    for (std::size_t i = 0; i < 2; ++i) {
      if (ctx.input(i).dtype() != data_type::float32) ctx.fail("only float32 is supported");
    }
    tensor& y = ctx.allocate_output(0, data_type::float32, xs);
    float* sum = ctx.wants_output(3) ? ctx.allocate_output(3, data_type::float32, xs).mutable_data<float>() : nullptr;
    const float* xd = x.data<float>();
    const float* sd = skip.data<float>();
    float* yd = y.mutable_data<float>();
    const row_norm_params norm{gamma, beta, epsilon_, simplified_, nullptr, nullptr};
    detail::parallel_for(ctx.threads(), rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1)),
                         [&](std::int64_t lo, std::int64_t hi) {
                           std::vector<float> scratch(sum ? 0 : static_cast<std::size_t>(d));
                           for (std::int64_t r = lo; r < hi; ++r) {
                             float* s = sum ? sum + r * d : scratch.data();
                             const float* in = xd + r * d;
                             const float* sk = sd + (r % tokens) * d;
                             for (std::int64_t i = 0; i < d; ++i) s[i] = (bias ? in[i] + bias[i] : in[i]) + sk[i];
                             normalize_rows(s, yd + r * d, 1, d, norm);
                           }
                         });
  }

 private:
  /// The rows skip has: `rows` when it has the input's shape, S when it is [1, S, D] or [S, D]
  /// (then row r of the input reads row r mod S).
  static std::int64_t skip_rows(const kernel_context& ctx, const shape_t& xs, const shape_t& ss, std::int64_t rows) {
    if (ss == xs) return rows;
    const bool per_token = xs.size() == 3 && ss.size() >= 2 && ss.back() == xs[2] && ss[ss.size() - 2] == xs[1] && xs[1] > 0 &&
                           (ss.size() == 2 || (ss.size() == 3 && ss[0] == 1));
    if (!per_token) ctx.fail("skip " + to_string(ss) + " does not fit input " + to_string(xs));
    return xs[1];
  }

  /// Input i as a float32 vector of n values; null when absent.
  static const float* vector_input(const kernel_context& ctx, std::size_t i, std::int64_t n, const char* name) {
    if (!ctx.has_input(i)) return nullptr;
    const tensor& t = ctx.input(i);
    if (t.dtype() != data_type::float32 || t.element_count() != n) {
      ctx.fail(std::string(name) + " must be float32 of " + std::to_string(n) + " values, got " + to_string(t.shape()));
    }
    return t.data<float>();
  }

  float epsilon_;
  bool simplified_;
};

}  // namespace

void register_skip_norm_kernels(kernel_registry& r) {
  r.add("com.microsoft", "SkipLayerNormalization", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<skip_layer_norm_kernel>(info, false);
  });
  r.add("com.microsoft", "SkipSimplifiedLayerNormalization", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<skip_layer_norm_kernel>(info, true);
  });
}

}  // namespace inferopt::runtime::nn
