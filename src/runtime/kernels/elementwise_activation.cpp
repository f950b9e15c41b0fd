// Activation functions: Relu, LeakyRelu, PRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh,
// Erf, Gelu, Softplus, Softsign, Elu, Selu, ThresholdedRelu. Float types (16-bit floats are
// computed in float); Relu, PRelu and Clip also take the integer types their specs allow.
// Transcendental ops run through Eigen's vectorized array functions; their error against the
// exact function is a few ulp, well inside ONNX's rtol 1e-3.

#include <cmath>
#include <numbers>
#include <optional>
#include <unsupported/Eigen/SpecialFunctions>

#include "elementwise_common.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::elementwise {

namespace {

struct relu {
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

struct leaky_relu {
  float alpha;
  explicit leaky_relu(const kernel_build_info& info) : alpha(info.node.attr_float("alpha", 0.01f)) {}
  // x < 0 ? alpha x : x as a sum of two selects: a select feeding a multiply is not
  // vectorized (the compiler must not speculate a float op that may trap).
  template <class T>
  T operator()(T x) const {
    return (x < T(0) ? T(0) : x) + T(alpha) * (x < T(0) ? x : T(0));
  }
};

struct sigmoid {
  template <class T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <class A>
  auto array(const A& x) const {
    return x.logistic();
  }
};

struct hard_sigmoid {
  float alpha;
  float beta;
  explicit hard_sigmoid(const kernel_build_info& info)
      : alpha(info.node.attr_float("alpha", 0.2f)), beta(info.node.attr_float("beta", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    const T y = T(alpha) * x + T(beta);
    return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
  }
};

struct hard_swish {
  template <class T>
  T operator()(T x) const {
    const T y = x * T(1.0 / 6.0) + T(0.5);
    return x * (y < T(0) ? T(0) : (y > T(1) ? T(1) : y));
  }
};

struct tanh_op {
  template <class T>
  T operator()(T x) const {
    return std::tanh(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.tanh();
  }
};

struct erf_op {
  template <class T>
  T operator()(T x) const {
    return std::erf(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.erf();
  }
};

/// 0.5 x (1 + erf(x / sqrt 2)), or with approximate = "tanh" 0.5 x (1 + tanh(sqrt(2/pi) (x +
/// 0.044715 x^3))). Both are rewritten so no 1 + (-1 + tiny) cancellation happens for
/// negative x (it costs float most of its digits below x = -3): the erf form as x Phi(x) with
/// Phi(x) = 0.5 erfc(|x| / sqrt 2) for x < 0 and 1 - 0.5 erfc(|x| / sqrt 2) above, the tanh
/// form as x / (1 + e^(-2u)). At +-inf both give what the spec's formula gives in IEEE
/// arithmetic (+inf, and NaN from -inf * 0).
struct gelu {
  bool tanh_approximation;
  explicit gelu(bool tanh) : tanh_approximation(tanh) {}
  explicit gelu(const kernel_build_info& info) {
    const std::string mode = info.node.attr_string("approximate", "none");
    if (mode != "none" && mode != "tanh")
      info.fail("attribute 'approximate' must be 'none' or 'tanh', got '" + mode + "'");
    tanh_approximation = mode == "tanh";
  }

  // x Phi(x), given h = 0.5 erfc(|x| / sqrt 2): Phi is 1 - h above 0 and h elsewhere (at 0,
  // h = 0.5 = Phi(0)). Arithmetic instead of a select, which the compiler does not vectorize.
  template <class T>
  static T times_phi(T x, T h) {
    return x * (h + static_cast<T>(x > T(0)) * (T(1) - T(2) * h));
  }

  template <class T>
  T operator()(T x) const {
    if (tanh_approximation) {
      const T k = T(2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // 2 sqrt(2 / pi)
      return x / (T(1) + std::exp(-k * (x + T(0.044715) * x * x * x)));
    }
    return times_phi(x, T(0.5) * std::erfc(std::abs(x) * T(1 / std::numbers::sqrt2)));
  }

  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    using array_t = block_array<T>;
    if (tanh_approximation) {
      const T k = T(2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
      return array_t(x / (T(1) + (-k * (x + T(0.044715) * x.cube())).exp()));
    }
    array_t y(x.size());
    if constexpr (std::is_same_v<T, float>) {
      nn::gelu_erf(x.data(), nullptr, y.data(), x.size());  // the widest instruction set's build
    } else {
      for (Eigen::Index i = 0; i < x.size(); ++i) y[i] = (*this)(x[i]);  // double: the C library's erfc
    }
    return y;
  }
};

struct softplus {
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
  template <class T>
  T operator()(T x) const {
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    return x.max(T(0)) + (-x.abs()).exp().log1p();
  }
};

struct softsign {
  template <class T>
  T operator()(T x) const {
    return x / (T(1) + std::abs(x));
  }
};

struct elu {
  float alpha;
  explicit elu(const kernel_build_info& info) : alpha(info.node.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(alpha) * std::expm1(x) : x;
  }
  // x < 0 ? alpha (e^x - 1) : x without a select (Eigen 3.4 does not vectorize select);
  // Eigen's max/min with a scalar return x when x is NaN, so NaN stays NaN.
  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    return x.max(T(0)) + T(alpha) * x.min(T(0)).expm1();
  }
};

struct selu {
  float alpha;
  float gamma;
  explicit selu(const kernel_build_info& info)
      : alpha(info.node.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(info.node.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class T>
  T operator()(T x) const {
    return x > T(0) ? T(gamma) * x : T(gamma) * T(alpha) * std::expm1(x);
  }
  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    return T(gamma) * (x.max(T(0)) + T(alpha) * x.min(T(0)).expm1());
  }
};

struct thresholded_relu {
  float alpha;
  explicit thresholded_relu(const kernel_build_info& info) : alpha(info.node.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x > T(alpha) ? x : T(0);
  }
};

// ---- PRelu -----------------------------------------------------------------------------------

/// y = x < 0 ? slope * x : x, slope broadcast to x (unidirectional). Opset 6 and earlier
/// gave a 1-D slope per channel (axis 1); it is viewed as [C, 1, ...] there.
class prelu_kernel final : public kernel {
 public:
  explicit prelu_kernel(const kernel_build_info& info) : channel_slope_(info.opset < 7) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    tensor slope = ctx.input(1);
    if (x.dtype() != slope.dtype()) ctx.fail("slope type differs from the input type");
    if (channel_slope_ && slope.rank() == 1 && x.rank() >= 2 && slope.dim(0) == x.dim(1)) {
      shape_t s(x.rank() - 1, 1);
      s[0] = slope.dim(0);
      slope = slope.reshaped(std::move(s));
    }
    if (broadcast_shape(ctx, x, slope) != x.shape()) {
      ctx.fail("slope of shape " + to_string(slope.shape()) + " does not broadcast to the input's shape " +
               to_string(x.shape()));
    }
    using types =
        concat<float_types,
               type_list<native<std::int32_t>, native<std::int64_t>, native<std::uint32_t>, native<std::uint64_t>>>;
    dispatch<types>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      tensor& y = ctx.allocate_output(0, E::type, x.shape());
      binary_map<E, E, E>(ctx.threads(), x, slope, y, [](auto v, auto s) {
        using T = decltype(v);
        if constexpr (std::is_floating_point_v<T>) {
          return (v < T(0) ? T(0) : v) + s * (v < T(0) ? v : T(0));  // vectorizes, as in leaky_relu
        } else {
          return v < T(0) ? wrapping_mul(s, v) : v;
        }
      });
    });
  }

 private:
  bool channel_slope_;
};

// ---- Clip ------------------------------------------------------------------------------------

template <class T>
struct clamp {
  T lo;
  T hi;
  T operator()(T x) const {
    const T y = x < lo ? lo : x;
    return y > hi ? hi : y;  // min > max gives max everywhere, as the spec says
  }
};

/// y = min(max(x, min), max). Before opset 11 the bounds are attributes, from 11 optional
/// scalar inputs; an omitted bound does not clip.
class clip_kernel final : public kernel {
 public:
  explicit clip_kernel(const kernel_build_info& info) : from_inputs_(info.opset >= 11) {
    if (const ir::attribute* a = info.node.find_attribute("min")) attr_min_ = a->f;
    if (const ir::attribute* a = info.node.find_attribute("max")) attr_max_ = a->f;
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    dispatch<numeric_types>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      using T = typename E::value;
      clamp<T> op{std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max()};
      if constexpr (std::is_floating_point_v<T>) {
        op = {-std::numeric_limits<T>::infinity(), std::numeric_limits<T>::infinity()};
      }
      if (from_inputs_) {
        if (ctx.has_input(1)) op.lo = bound<E>(ctx, ctx.input(1), x, "min");
        if (ctx.has_input(2)) op.hi = bound<E>(ctx, ctx.input(2), x, "max");
      } else {
        if (attr_min_) op.lo = saturate<T>(*attr_min_);
        if (attr_max_) op.hi = saturate<T>(*attr_max_);
      }
      tensor& y = ctx.allocate_output(0, E::type, x.shape());
      unary_map<E, E>(ctx.threads(), x, y, op);
    });
  }

 private:
  template <class E>
  static typename E::value bound(const kernel_context& ctx, const tensor& t, const tensor& x, const char* name) {
    if (t.dtype() != x.dtype()) ctx.fail(std::string("'") + name + "' has a different type than the input");
    if (t.element_count() != 1)
      ctx.fail(std::string("'") + name + "' must be a scalar, got shape " + to_string(t.shape()));
    return E::load(t.data<typename E::storage>()[0]);
  }

  template <class T>
  static T saturate(float v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else {
      if (!(v > static_cast<float>(std::numeric_limits<T>::lowest()))) return std::numeric_limits<T>::lowest();
      if (!(v < static_cast<float>(std::numeric_limits<T>::max()))) return std::numeric_limits<T>::max();
      return static_cast<T>(v);
    }
  }

  bool from_inputs_;
  std::optional<float> attr_min_;
  std::optional<float> attr_max_;
};

/// com.microsoft QuickGelu: x * sigmoid(alpha x), the sigmoid approximation of GELU.
struct quick_gelu {
  float alpha;
  explicit quick_gelu(const kernel_build_info& info) : alpha(info.node.attr_float("alpha", 1.702f)) {}
  template <class T>
  T operator()(T x) const {
    return x * sigmoid{}(static_cast<T>(alpha) * x);
  }
};

/// An activation of X plus a bias that runs along X's last axis (what the fusion of a bias
/// Add into it gives): com.microsoft FastGelu (tanh GELU, bias optional) and BiasGelu (erf
/// GELU, bias required).
template <bool Tanh, bool BiasRequired>
class bias_gelu_kernel final : public kernel {
 public:
  explicit bias_gelu_kernel(const kernel_build_info& info) : op_(Tanh) {
    if (BiasRequired && (info.node.inputs().size() < 2 || !info.node.input(1))) info.fail("the bias input is required");
  }

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor* bias = ctx.input_count() > 1 && ctx.has_input(1) ? &ctx.input(1) : nullptr;
    dispatch<float_types>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      tensor& y = ctx.allocate_output(0, E::type, x.shape());
      if (!bias) return unary_map<E, E>(ctx.threads(), x, y, op_);
      const std::int64_t n = x.shape().empty() ? 1 : x.shape().back();
      if (bias->dtype() != x.dtype() || bias->element_count() != n) {
        ctx.fail("bias must hold one value of X's type per entry of X's last axis");
      }
      const auto* src = x.data<typename E::storage>();
      const auto* b = bias->data<typename E::storage>();
      auto* dst = y.mutable_data<typename E::storage>();
      const std::int64_t rows = n > 0 ? x.element_count() / n : 0;
      const std::int64_t rows_per_task = std::max<std::int64_t>(1, grain / std::max<std::int64_t>(n, 1));
      if constexpr (std::is_same_v<typename E::storage, float>) {
        if (!Tanh) {  // BiasGelu in one pass, a row at a time, on the widest build
          detail::parallel_for(ctx.threads(), rows, rows_per_task, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) nn::gelu_erf(src + r * n, b, dst + r * n, n);
          });
          return;
        }
      }
      // y = x + bias, then the activation in place through the vectorized path.
      detail::parallel_for(ctx.threads(), rows, rows_per_task, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t r = lo; r < hi; ++r) {
          for (std::int64_t j = 0; j < n; ++j) dst[r * n + j] = E::store(E::load(src[r * n + j]) + E::load(b[j]));
        }
      });
      unary_map<E, E>(ctx.threads(), y, y, op_);
    });
  }

 private:
  gelu op_;
};

}  // namespace

void register_activation_kernels(kernel_registry& r) {
  add(r, "Relu", factory<unary_kernel<signed_types, relu>>(), 6);
  add(r, "LeakyRelu", factory<unary_kernel<float_types, leaky_relu>>(), 6);
  add(r, "PRelu", factory<prelu_kernel>(), 6);
  add(r, "Clip", factory<clip_kernel>(), 6);
  add(r, "Sigmoid", factory<unary_kernel<float_types, sigmoid>>(), 6);
  add(r, "HardSigmoid", factory<unary_kernel<float_types, hard_sigmoid>>(), 6);
  add(r, "HardSwish", factory<unary_kernel<float_types, hard_swish>>(), 14);
  add(r, "Tanh", factory<unary_kernel<float_types, tanh_op>>(), 6);
  add(r, "Erf", factory<unary_kernel<float_types, erf_op>>(), 9);
  add(r, "Gelu", factory<unary_kernel<float_types, gelu>>(), 20);
  r.add("com.microsoft", "Gelu", factory<unary_kernel<float_types, gelu>>());  // the erf form
  r.add("com.microsoft", "FastGelu", factory<bias_gelu_kernel<true, false>>());
  r.add("com.microsoft", "BiasGelu", factory<bias_gelu_kernel<false, true>>());
  r.add("com.microsoft", "QuickGelu", factory<unary_kernel<float_types, quick_gelu>>());
  add(r, "Softplus", factory<unary_kernel<float_types, softplus>>(), 1);
  add(r, "Softsign", factory<unary_kernel<float_types, softsign>>(), 1);
  add(r, "Elu", factory<unary_kernel<float_types, elu>>(), 6);
  add(r, "Selu", factory<unary_kernel<float_types, selu>>(), 6);
  add(r, "ThresholdedRelu", factory<unary_kernel<float_types, thresholded_relu>>(), 10);
}

}  // namespace inferopt::runtime::elementwise
