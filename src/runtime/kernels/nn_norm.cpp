// Normalizations: BatchNormalization (inference form of opsets 1-15), InstanceNormalization,
// LayerNormalization (opset 17, optional Mean and InvStdDev outputs), RMSNormalization (opset
// 23: x / sqrt(mean(x^2) + eps) * scale; also as onnxruntime's SimplifiedLayerNormalization).
// float32 and float64.
//
// BatchNormalization folds its four parameter vectors into y = x * a[c] + b[c] (computed in
// double, a = scale / sqrt(var + eps), b = bias - mean * a) and streams every (n, c) plane
// through one multiply-add that vectorizes; planes run in parallel. Instance normalization,
// and layer normalization of float64, accumulate mean and variance in double (two passes over
// a row); layer normalization of float32 sums in float vector lanes (vector_math's
// normalize_rows, as onnxruntime sums in float), which on rows of a few dozen values was the
// cost. Then one multiply-add per element. Error bound: a few float32 ulps per element.
// Training (batch statistics, running-mean outputs) is refused as unsupported.

#include <cmath>
#include <type_traits>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

/// The values of a float or double parameter tensor as double.
std::vector<double> as_double(const kernel_context& ctx, const tensor& t, const char* name) {
  std::vector<double> out(static_cast<std::size_t>(t.element_count()));
  if (t.dtype() == data_type::float32) {
    const float* v = t.data<float>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = v[i];
  } else if (t.dtype() == data_type::float64) {
    const double* v = t.data<double>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = v[i];
  } else {
    ctx.unsupported(std::string(name) + " of element type " + std::string(ir::to_string(t.dtype())) + " is not supported");
  }
  return out;
}

class batch_norm_kernel final : public kernel {
 public:
  batch_norm_kernel(float epsilon, bool per_activation) : epsilon_(epsilon), per_activation_(per_activation) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("input of shape " + to_string(x.shape()) + " has no channel dim");
    const std::int64_t batch = x.dim(0), channels = x.dim(1), size = detail::product(x.shape(), 2);
    // Per-activation parameters (spatial = 0 before opset 9) cover every (c, spatial) entry.
    const std::int64_t groups = per_activation_ ? channels * size : channels;
    const std::int64_t inner = per_activation_ ? 1 : size;
    static constexpr const char* names[] = {"scale", "bias", "mean", "var"};
    std::vector<double> p[4];
    for (std::size_t i = 0; i < 4; ++i) {
      const tensor& t = ctx.input(i + 1);
      if (t.element_count() != groups || (!per_activation_ && t.rank() != 1)) {
        ctx.fail(std::string(names[i]) + " of shape " + to_string(t.shape()) + " does not match input of shape " +
                 to_string(x.shape()));
      }
      p[i] = as_double(ctx, t, names[i]);
    }
    std::vector<T> a(static_cast<std::size_t>(groups)), b(static_cast<std::size_t>(groups));
    for (std::size_t c = 0; c < a.size(); ++c) {
      const double s = p[0][c] / std::sqrt(p[3][c] + static_cast<double>(epsilon_));
      a[c] = static_cast<T>(s);
      b[c] = static_cast<T>(p[1][c] - p[2][c] * s);
    }
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t blocks = batch * groups;
    detail::parallel_for(ctx.threads(), blocks, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(inner, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t k = begin; k < end; ++k) {
                             const T ak = a[k % groups], bk = b[k % groups];
                             const T* in = xd + k * inner;
                             T* out = yd + k * inner;
                             for (std::int64_t i = 0; i < inner; ++i) out[i] = in[i] * ak + bk;
                           }
                         });
  }

  float epsilon_;
  bool per_activation_;
};

/// Mean and 1/sqrt(variance + eps) of n values, accumulated in double.
template <class T>
std::pair<double, double> moments(const T* v, std::int64_t n, double epsilon) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += v[i];
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double sq = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = v[i] - mean;
    sq += d * d;
  }
  const double var = n > 0 ? sq / static_cast<double>(n) : 0.0;
  return {mean, 1.0 / std::sqrt(var + epsilon)};
}

class instance_norm_kernel final : public kernel {
 public:
  explicit instance_norm_kernel(float epsilon) : epsilon_(epsilon) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail("input of shape " + to_string(x.shape()) + " needs a batch, a channel and a spatial dim");
    const std::int64_t channels = x.dim(1), size = detail::product(x.shape(), 2), planes = x.dim(0) * channels;
    for (std::size_t i = 1; i <= 2; ++i) {
      const tensor& t = ctx.input(i);
      if (t.rank() != 1 || t.dim(0) != channels) {
        ctx.fail(std::string(i == 1 ? "scale" : "bias") + " of shape " + to_string(t.shape()) + " does not match " +
                 std::to_string(channels) + " channels");
      }
    }
    const std::vector<double> scale = as_double(ctx, ctx.input(1), "scale");
    const std::vector<double> bias = as_double(ctx, ctx.input(2), "bias");
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    detail::parallel_for(ctx.threads(), planes, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        const T* in = xd + p * size;
        const auto [mean, inv] = moments(in, size, epsilon_);
        const std::int64_t c = p % channels;
        const T a = static_cast<T>(scale[c] * inv), b = static_cast<T>(bias[c] - mean * scale[c] * inv);
        T* out = yd + p * size;
        for (std::int64_t i = 0; i < size; ++i) out[i] = in[i] * a + b;
      }
    });
  }

  float epsilon_;
};

/// 0 and 1/sqrt(mean of squares + eps) of n values, accumulated in double: RMS norm's moments.
template <class T>
std::pair<double, double> rms_moments(const T* v, std::int64_t n, double epsilon) {
  double sq = 0;
  for (std::int64_t i = 0; i < n; ++i) sq += static_cast<double>(v[i]) * v[i];
  return {0.0, 1.0 / std::sqrt((n > 0 ? sq / static_cast<double>(n) : 0.0) + epsilon)};
}

/// LayerNormalization, or RMSNormalization when `rms` (no mean subtracted, no bias input).
class layer_norm_kernel final : public kernel {
 public:
  layer_norm_kernel(std::int64_t axis, float epsilon, bool rms) : axis_(axis), epsilon_(epsilon), rms_(rms) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  /// Scale or bias spread over the normalized shape (they broadcast to it, numpy-style).
  template <class T>
  std::vector<T> spread(const kernel_context& ctx, const tensor& p, const shape_t& normalized, const char* name) {
    if (p.dtype() != ctx.input(0).dtype()) {
      ctx.fail(std::string(name) + " is " + std::string(ir::to_string(p.dtype())) + ", input is " +
               std::string(ir::to_string(ctx.input(0).dtype())));
    }
    shape_t s = p.shape();
    while (s.size() > normalized.size() && s.front() == 1) s.erase(s.begin());
    bool fits = s.size() <= normalized.size();
    for (std::size_t k = 0; fits && k < s.size(); ++k) {
      const std::int64_t want = normalized[normalized.size() - s.size() + k];
      fits = s[k] == want || s[k] == 1;
    }
    if (!fits) {
      ctx.fail(std::string(name) + " of shape " + to_string(p.shape()) + " does not broadcast to the normalized shape " +
               to_string(normalized));
    }
    const std::int64_t n = detail::product(normalized);
    std::vector<T> out(static_cast<std::size_t>(n));
    const T* v = p.data<T>();
    if (p.element_count() == n) {
      std::copy(v, v + n, out.begin());
      return out;
    }
    detail::broadcast_walker walk(normalized, {detail::broadcast_strides(s, normalized)});
    for (std::int64_t i = 0; i < n; ++i, walk.next()) out[i] = v[walk.offsets()[0]];
    return out;
  }

  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, x.rank());
    const shape_t normalized(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
    const std::int64_t rows = detail::product(x.shape(), 0, axis), inner = detail::product(normalized);
    const std::vector<T> scale = spread<T>(ctx, ctx.input(1), normalized, "scale");
    const std::vector<T> bias = !rms_ && ctx.has_input(2) ? spread<T>(ctx, ctx.input(2), normalized, "bias") : std::vector<T>();
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    shape_t stats_shape = x.shape();
    for (std::size_t k = axis; k < stats_shape.size(); ++k) stats_shape[k] = 1;
    float* mean_out = !rms_ && ctx.wants_output(1) ? ctx.allocate_output(1, data_type::float32, stats_shape).mutable_data<float>() : nullptr;
    float* inv_out = !rms_ && ctx.wants_output(2) ? ctx.allocate_output(2, data_type::float32, stats_shape).mutable_data<float>() : nullptr;
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(inner, 1));
    if constexpr (std::is_same_v<T, float>) {
      detail::parallel_for(ctx.threads(), rows, grain, [&](std::int64_t begin, std::int64_t end) {
        const row_norm_params p{scale.data(), bias.empty() ? nullptr : bias.data(), epsilon_, rms_,
                                mean_out ? mean_out + begin : nullptr, inv_out ? inv_out + begin : nullptr};
        normalize_rows(xd + begin * inner, yd + begin * inner, end - begin, inner, p);
      });
      return;
    }
    detail::parallel_for(ctx.threads(), rows, grain,
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t r = begin; r < end; ++r) {
                             const T* in = xd + r * inner;
                             T* out = yd + r * inner;
                             const auto [mean, inv] = rms_ ? rms_moments(in, inner, epsilon_) : moments(in, inner, epsilon_);
                             if (mean_out) mean_out[r] = static_cast<float>(mean);
                             if (inv_out) inv_out[r] = static_cast<float>(inv);
                             const T m = static_cast<T>(mean), s = static_cast<T>(inv);
                             if (bias.empty()) {
                               for (std::int64_t i = 0; i < inner; ++i) out[i] = (in[i] - m) * s * scale[i];
                             } else {
                               for (std::int64_t i = 0; i < inner; ++i) out[i] = (in[i] - m) * s * scale[i] + bias[i];
                             }
                           }
                         });
  }

  std::int64_t axis_;
  float epsilon_;
  bool rms_;
};

}  // namespace

void register_norm_kernels(kernel_registry& r) {
  r.add("", "BatchNormalization", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const ir::node& n = info.node;
    if (info.opset >= 14) {
      if (n.attr_int("training_mode", 0) != 0) info.unsupported("training_mode 1 is not supported (inference only)");
    } else {
      for (std::size_t k = 1; k < n.outputs().size(); ++k) {
        if (n.outputs()[k]) info.unsupported("training outputs (running or saved statistics) are not supported");
      }
    }
    const bool per_activation = info.opset < 9 && n.attr_int("spatial", 1) == 0;
    return std::make_unique<batch_norm_kernel>(n.attr_float("epsilon", 1e-5f), per_activation);
  });
  r.add("", "InstanceNormalization", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<instance_norm_kernel>(info.node.attr_float("epsilon", 1e-5f));
  });
  r.add(
      "", "LayerNormalization",
      [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
        const ir::node& n = info.node;
        const std::int64_t stash = n.attr_int("stash_type", 1);
        if (stash != 1) info.unsupported("stash_type " + std::to_string(stash) + " is not supported (1, float, is)");
        return std::make_unique<layer_norm_kernel>(n.attr_int("axis", -1), n.attr_float("epsilon", 1e-5f), false);
      },
      17);
  const kernel_factory rms_norm = [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const ir::node& n = info.node;
    const std::int64_t stash = n.attr_int("stash_type", 1);
    if (stash != 1) info.unsupported("stash_type " + std::to_string(stash) + " is not supported (1, float, is)");
    for (std::size_t k = 1; k < n.outputs().size(); ++k) {
      if (n.outputs()[k]) info.unsupported("the inv_std_var output is not supported");
    }
    return std::make_unique<layer_norm_kernel>(n.attr_int("axis", -1), n.attr_float("epsilon", 1e-5f), true);
  };
  r.add("", "RMSNormalization", rms_norm, 23);
  r.add("", "SimplifiedLayerNormalization", rms_norm, 1);  // onnxruntime's RMS norm below opset 23
}

}  // namespace inferopt::runtime::nn
