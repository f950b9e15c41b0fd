// Arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow, Mod, BitShift and the variadic
// Max, Min, Sum, Mean. Integer arithmetic wraps (two's complement), integer Div truncates
// toward zero like C, and an integer division or remainder by zero is an error rather than
// undefined behaviour.

#include <cmath>

#include "elementwise_common.hpp"

namespace inferopt::runtime::elementwise {

namespace {

struct add_op {
  template <class T>
  T operator()(T a, T b) const {
    return wrapping_add(a, b);
  }
};

struct sub_op {
  template <class T>
  T operator()(T a, T b) const {
    return wrapping_sub(a, b);
  }
};

struct mul_op {
  template <class T>
  T operator()(T a, T b) const {
    return wrapping_mul(a, b);
  }
};

/// Fails when an integer divisor holds a zero.
template <class E>
void check_divisor(const kernel_context& ctx, const tensor& b) {
  if constexpr (is_integer_v<E>) {
    for (auto v : b.values<typename E::storage>()) {
      if (v == 0) ctx.fail("integer division by zero");
    }
  }
}

struct div_op {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == T(-1)) return wrapping_neg(a);  // INT_MIN / -1 traps on x86
    }
    return static_cast<T>(a / b);
  }
  template <class E>
  void check(const kernel_context& ctx, const tensor& b) const {
    check_divisor<E>(ctx, b);
  }
};

/// fmod = 0: the remainder takes the divisor's sign (Python's %); fmod = 1: the dividend's (C).
/// The spec asks for fmod = 1 with floats; ONNX's reference computes numpy's mod for fmod = 0,
/// and so do we.
struct mod_op {
  bool fmod;
  explicit mod_op(const kernel_build_info& info) {
    const std::int64_t f = info.node.attr_int("fmod", 0);
    if (f != 0 && f != 1) info.fail("attribute 'fmod' must be 0 or 1, got " + std::to_string(f));
    fmod = f == 1;
  }
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      T r = std::fmod(a, b);
      if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a % b);
    } else {
      if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      T r = static_cast<T>(a % b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    }
  }
  template <class E>
  void check(const kernel_context& ctx, const tensor& b) const {
    check_divisor<E>(ctx, b);
  }
};

struct bit_shift {
  bool left;
  explicit bit_shift(const kernel_build_info& info) {
    const std::string d = info.node.attr_string("direction", "");
    if (d != "LEFT" && d != "RIGHT") info.fail("attribute 'direction' must be 'LEFT' or 'RIGHT', got '" + d + "'");
    left = d == "LEFT";
  }
  template <class T>
  T operator()(T a, T b) const {
    if (b >= sizeof(T) * 8) return T(0);  // shifting every bit out (undefined in C++)
    return static_cast<T>(left ? a << b : a >> b);
  }
};

struct max_op {
  template <class T>
  T operator()(T a, T b) const {
    return (a < b || b != b) ? b : a;  // NaN in either input gives NaN, as numpy
  }
};

struct min_op {
  template <class T>
  T operator()(T a, T b) const {
    return (b < a || b != b) ? b : a;
  }
};

// ---- Pow ---------------------------------------------------------------------------------

/// base^exponent for integers by squaring (wrapping); a negative exponent truncates 1/base^-e.
template <class T>
T integer_pow(T base, std::int64_t e) {
  if (e < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (e % 2) ? T(-1) : T(1);
    }
    return T(0);
  }
  T result = T(1);
  while (e > 0) {
    if (e & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    e >>= 1;
  }
  return result;
}

struct pow_op {
  template <class T, class U>
  T operator()(T a, U b) const {
    if constexpr (std::is_integral_v<T> && std::is_integral_v<U>) {
      return integer_pow(a, static_cast<std::int64_t>(b));
    } else if constexpr (std::is_integral_v<T>) {
      return float_to_integer<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    } else if constexpr (std::is_same_v<T, U>) {
      return std::pow(a, b);
    } else {
      return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

/// A copy of `t` as `Out` elements (the exponent of a mixed-type Pow).
template <class Out>
tensor converted(const kernel_context& ctx, const tensor& t) {
  tensor out(Out::type, t.shape());
  dispatch<numeric_types>(ctx, t.dtype(), [&](auto e) {
    using E = decltype(e);
    unary_map<E, Out>(ctx.threads(), t, out, [](auto v) { return static_cast<typename Out::value>(v); });
  });
  return out;
}

/// Z = X ^ Y; X in float types, int32 or int64, Y any numeric type, Z has X's type. Mixed
/// types compute through int64 (integer exponent of an integer base) or double.
class pow_kernel final : public kernel {
 public:
  explicit pow_kernel(const kernel_build_info& info) : legacy_(info) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor y = legacy_.apply(ctx, x, ctx.input(1));
    const shape_t shape = broadcast_shape(ctx, x, y);
    using bases = concat<float_types, type_list<native<std::int32_t>, native<std::int64_t>>>;
    dispatch<bases>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      tensor& z = ctx.allocate_output(0, E::type, shape);
      if (y.dtype() == x.dtype()) {
        binary_map<E, E, E>(ctx.threads(), x, y, z, pow_op{});
      } else if (is_integer_v<E> && contains<int_types>(y.dtype())) {
        binary_map<E, native<std::int64_t>, E>(ctx.threads(), x, converted<native<std::int64_t>>(ctx, y), z, pow_op{});
      } else {
        binary_map<E, native<double>, E>(ctx.threads(), x, converted<native<double>>(ctx, y), z, pow_op{});
      }
    });
  }

 private:
  legacy_broadcast legacy_;
};

// ---- variadic ----------------------------------------------------------------------------

/// Folds `Op` over one or more broadcast inputs of one type; Mean divides the sum by the count.
template <class List, class Op, bool Mean = false>
class variadic_kernel final : public kernel {
 public:
  explicit variadic_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    std::vector<const tensor*> inputs;
    std::vector<const shape_t*> shapes;
    for (std::size_t i = 0; i < ctx.input_count(); ++i) {
      inputs.push_back(&ctx.input(i));
      shapes.push_back(&inputs.back()->shape());
      if (inputs.back()->dtype() != inputs.front()->dtype()) ctx.fail("input types differ");
    }
    if (inputs.empty()) ctx.fail("needs at least one input");
    const shape_t shape = detail::broadcast_shapes(ctx, shapes);
    dispatch<List>(ctx, inputs.front()->dtype(), [&](auto e) {
      using E = decltype(e);
      using T = typename E::value;
      tensor& y = ctx.allocate_output(0, E::type, shape);
      if (inputs.size() == 1) {
        binary_map<E, E, E>(ctx.threads(), *inputs[0], *inputs[0], y, [](auto a, auto) { return a; });
        return;
      }
      // The 16-bit floats accumulate in float and round once at the end.
      using Acc = std::conditional_t<std::is_same_v<typename E::storage, T>, E, native<T>>;
      tensor scratch = std::is_same_v<Acc, E> ? tensor() : tensor(Acc::type, shape);
      tensor& acc = std::is_same_v<Acc, E> ? y : scratch;
      binary_map<E, E, Acc>(ctx.threads(), *inputs[0], *inputs[1], acc, Op{});
      for (std::size_t i = 2; i < inputs.size(); ++i)
        binary_map<Acc, E, Acc>(ctx.threads(), acc, *inputs[i], acc, Op{});
      if constexpr (Mean) {
        const T n = static_cast<T>(inputs.size());
        unary_map<Acc, Acc>(ctx.threads(), acc, acc, [n](T v) { return v / n; });
      }
      if constexpr (!std::is_same_v<Acc, E>) unary_map<Acc, E>(ctx.threads(), acc, y, [](T v) { return v; });
    });
  }
};

}  // namespace

void register_arithmetic_kernels(kernel_registry& r) {
  add(r, "Add", factory<binary_kernel<numeric_types, add_op>>(), 1);
  add(r, "Sub", factory<binary_kernel<numeric_types, sub_op>>(), 1);
  add(r, "Mul", factory<binary_kernel<numeric_types, mul_op>>(), 1);
  add(r, "Div", factory<binary_kernel<numeric_types, div_op>>(), 1);
  add(r, "Pow", factory<pow_kernel>(), 1);
  add(r, "Mod", factory<binary_kernel<numeric_types, mod_op>>(), 10);
  add(r, "BitShift", factory<binary_kernel<unsigned_int_types, bit_shift>>(), 11);
  add(r, "Max", factory<variadic_kernel<numeric_types, max_op>>(), 6);
  add(r, "Min", factory<variadic_kernel<numeric_types, min_op>>(), 6);
  add(r, "Sum", factory<variadic_kernel<float_types, add_op>>(), 6);
  add(r, "Mean", factory<variadic_kernel<float_types, add_op, true>>(), 6);
}

}  // namespace inferopt::runtime::elementwise
