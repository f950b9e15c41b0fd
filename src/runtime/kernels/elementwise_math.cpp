// Unary math: Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil, Round, Sign, the trigonometric
// and hyperbolic functions, IsNaN, IsInf and Not. Float types everywhere; Neg, Abs and Sign
// also on the integer types the specs list (negation wraps, as two's complement does).

#include <cmath>

#include "elementwise_common.hpp"

namespace inferopt::runtime::elementwise {

namespace {

struct sqrt_op {
  template <class T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.sqrt();
  }
};

struct exp_op {
  template <class T>
  T operator()(T x) const {
    return std::exp(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.exp();
  }
};

struct log_op {
  template <class T>
  T operator()(T x) const {
    return std::log(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.log();
  }
};

struct neg {
  template <class T>
  T operator()(T x) const {
    return wrapping_neg(x);
  }
};

struct abs_op {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(x);
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? wrapping_neg(x) : x;
    } else {
      return x;
    }
  }
};

struct reciprocal {
  template <class T>
  T operator()(T x) const {
    return T(1) / x;
  }
};

struct floor_op {
  template <class T>
  T operator()(T x) const {
    return std::floor(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.floor();
  }
};

struct ceil_op {
  template <class T>
  T operator()(T x) const {
    return std::ceil(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.ceil();
  }
};

// Halves round to even: nearbyint/rint follow the default rounding mode, round-to-nearest-even.
struct round_op {
  template <class T>
  T operator()(T x) const {
    return std::nearbyint(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.rint();
  }
};

struct sign {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T(1) : T(0);
    } else {
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);  // keeps NaN
    }
  }
};

struct sin_op {
  template <class T>
  T operator()(T x) const {
    return std::sin(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.sin();
  }
};

struct cos_op {
  template <class T>
  T operator()(T x) const {
    return std::cos(x);
  }
  template <class A>
  auto array(const A& x) const {
    return x.cos();
  }
};

// The rarer functions stay on the C library; nothing in inference graphs makes them hot.
struct tan_op {
  template <class T>
  T operator()(T x) const {
    return std::tan(x);
  }
};
struct asin_op {
  template <class T>
  T operator()(T x) const {
    return std::asin(x);
  }
};
struct acos_op {
  template <class T>
  T operator()(T x) const {
    return std::acos(x);
  }
};
struct atan_op {
  template <class T>
  T operator()(T x) const {
    return std::atan(x);
  }
};
struct sinh_op {
  template <class T>
  T operator()(T x) const {
    return std::sinh(x);
  }
};
struct cosh_op {
  template <class T>
  T operator()(T x) const {
    return std::cosh(x);
  }
};
struct asinh_op {
  template <class T>
  T operator()(T x) const {
    return std::asinh(x);
  }
};
struct acosh_op {
  template <class T>
  T operator()(T x) const {
    return std::acosh(x);
  }
};
struct atanh_op {
  template <class T>
  T operator()(T x) const {
    return std::atanh(x);
  }
};

struct is_nan {
  template <class T>
  bool operator()(T x) const {
    return x != x;
  }
};

struct is_inf {
  bool negative;
  bool positive;
  explicit is_inf(const kernel_build_info& info)
      : negative(info.node.attr_int("detect_negative", 1) != 0),
        positive(info.node.attr_int("detect_positive", 1) != 0) {}
  template <class T>
  bool operator()(T x) const {
    return std::isinf(x) && (x > T(0) ? positive : negative);
  }
};

struct logical_not {
  bool operator()(bool x) const { return !x; }
};

}  // namespace

void register_math_kernels(kernel_registry& r) {
  add(r, "Sqrt", factory<unary_kernel<float_types, sqrt_op>>(), 6);
  add(r, "Exp", factory<unary_kernel<float_types, exp_op>>(), 6);
  add(r, "Log", factory<unary_kernel<float_types, log_op>>(), 6);
  add(r, "Neg", factory<unary_kernel<signed_types, neg>>(), 6);
  add(r, "Abs", factory<unary_kernel<numeric_types, abs_op>>(), 6);
  add(r, "Reciprocal", factory<unary_kernel<float_types, reciprocal>>(), 6);
  add(r, "Floor", factory<unary_kernel<float_types, floor_op>>(), 6);
  add(r, "Ceil", factory<unary_kernel<float_types, ceil_op>>(), 6);
  add(r, "Round", factory<unary_kernel<float_types, round_op>>(), 11);
  add(r, "Sign", factory<unary_kernel<numeric_types, sign>>(), 9);
  add(r, "Sin", factory<unary_kernel<float_types, sin_op>>(), 7);
  add(r, "Cos", factory<unary_kernel<float_types, cos_op>>(), 7);
  add(r, "Tan", factory<unary_kernel<float_types, tan_op>>(), 7);
  add(r, "Asin", factory<unary_kernel<float_types, asin_op>>(), 7);
  add(r, "Acos", factory<unary_kernel<float_types, acos_op>>(), 7);
  add(r, "Atan", factory<unary_kernel<float_types, atan_op>>(), 7);
  add(r, "Sinh", factory<unary_kernel<float_types, sinh_op>>(), 9);
  add(r, "Cosh", factory<unary_kernel<float_types, cosh_op>>(), 9);
  add(r, "Asinh", factory<unary_kernel<float_types, asinh_op>>(), 9);
  add(r, "Acosh", factory<unary_kernel<float_types, acosh_op>>(), 9);
  add(r, "Atanh", factory<unary_kernel<float_types, atanh_op>>(), 9);
  add(r, "IsNaN", factory<unary_kernel<float_types, is_nan, true>>(), 9);
  add(r, "IsInf", factory<unary_kernel<float_types, is_inf, true>>(), 10);
  add(r, "Not", factory<unary_kernel<bool_types, logical_not>>(), 1);
}

}  // namespace inferopt::runtime::elementwise
