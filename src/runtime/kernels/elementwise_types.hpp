#pragma once
// Element types of the elementwise kernel family: traits that let one kernel body serve native
// types, bool (one byte) and the 16-bit floats stored as bits (computed in float); type lists
// with a dispatch over them (templates, no macros); integer arithmetic that wraps.
// Private to src/runtime/kernels.

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "inferopt/core/float16.hpp"
#include "inferopt/runtime/kernel.hpp"

namespace inferopt::runtime::elementwise {

// ---- element traits ----------------------------------------------------------------------

/// A type the tensor stores as itself.
template <class T>
struct native {
  using storage = T;
  using value = T;
  static constexpr data_type type = ir::data_type_of<T>();
  static constexpr T load(T x) noexcept { return x; }
  static constexpr T store(T x) noexcept { return x; }
};

/// IEEE half, stored as bits and computed in float. The conversions give the same bits as
/// inferopt::half_to_float / float_to_half (round to nearest even, NaN stays NaN), written
/// without branches (after F. Giesen's half conversions) so loops over them vectorize.
struct half {
  using storage = std::uint16_t;
  using value = float;
  static constexpr data_type type = data_type::float16;

  static float load(std::uint16_t h) noexcept {
    constexpr std::uint32_t shifted_exponent = 0x7c00u << 13;
    std::uint32_t o = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
    const std::uint32_t exponent = o & shifted_exponent;
    o += (127u - 15u) << 23;
    const std::uint32_t inf_nan = o + ((128u - 16u) << 23);
    // Subnormals: let the float unit normalize (o + 2^23) - 2^-14.
    const std::uint32_t subnormal =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(o + (1u << 23)) - std::bit_cast<float>(113u << 23));
    const std::uint32_t is_inf_nan = mask(exponent == shifted_exponent);
    const std::uint32_t is_subnormal = mask(exponent == 0);
    o = (inf_nan & is_inf_nan) | (subnormal & is_subnormal) | (o & ~(is_inf_nan | is_subnormal));
    return std::bit_cast<float>(o | (static_cast<std::uint32_t>(h & 0x8000u) << 16));
  }

  static std::uint16_t store(float f) noexcept {
    constexpr std::uint32_t subnormal_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = bits & 0x80000000u;
    const std::uint32_t x = bits ^ sign;
    const std::uint32_t inf_nan = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    // Subnormal results: adding the magic float aligns the 10 mantissa bits at the bottom,
    // rounded to nearest even by the float unit.
    const std::uint32_t subnormal =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(x) + std::bit_cast<float>(subnormal_magic)) - subnormal_magic;
    const std::uint32_t normal = (x + ((15u - 127u) << 23) + 0xfffu + ((x >> 13) & 1u)) >> 13;
    const std::uint32_t is_inf_nan = mask(x >= 0x47800000u);
    const std::uint32_t is_subnormal = mask(x < 0x38800000u);
    const std::uint32_t o =
        (inf_nan & is_inf_nan) | (subnormal & is_subnormal) | (normal & ~(is_inf_nan | is_subnormal));
    return static_cast<std::uint16_t>((sign >> 16) | o);
  }

 private:
  // All-ones when c holds. Selecting with masks, not ?:, keeps every operand computed, so the
  // compiler cannot move the float add into a branch (which blocks vectorization).
  static constexpr std::uint32_t mask(bool c) noexcept { return 0u - static_cast<std::uint32_t>(c); }
};

/// bfloat16, stored as bits and computed in float (round to nearest even, NaN stays NaN).
struct bfloat {
  using storage = std::uint16_t;
  using value = float;
  static constexpr data_type type = data_type::bfloat16;
  static float load(std::uint16_t x) noexcept { return inferopt::bfloat16_to_float(x); }
  static std::uint16_t store(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (x >> 16) | 0x40u;
    return static_cast<std::uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
};

/// bool, stored as one byte; reading any non-zero byte as true keeps odd files defined.
struct boolean {
  using storage = std::uint8_t;
  using value = bool;
  static constexpr data_type type = data_type::boolean;
  static constexpr bool load(std::uint8_t x) noexcept { return x != 0; }
  static constexpr std::uint8_t store(bool x) noexcept { return x ? 1 : 0; }
};

template <class E>
inline constexpr bool is_floating_v = std::is_floating_point_v<typename E::value>;
template <class E>
inline constexpr bool is_integer_v = std::is_integral_v<typename E::value> && !std::is_same_v<E, boolean>;

// ---- type lists and dispatch -------------------------------------------------------------

template <class... Es>
struct type_list {};

template <class... Ls>
struct concat_lists;
template <class... As>
struct concat_lists<type_list<As...>> {
  using type = type_list<As...>;
};
template <class... As, class... Bs, class... Rest>
struct concat_lists<type_list<As...>, type_list<Bs...>, Rest...> {
  using type = typename concat_lists<type_list<As..., Bs...>, Rest...>::type;
};
template <class... Ls>
using concat = typename concat_lists<Ls...>::type;

using float_types = type_list<native<float>, native<double>, half, bfloat>;
using signed_int_types =
    type_list<native<std::int8_t>, native<std::int16_t>, native<std::int32_t>, native<std::int64_t>>;
using unsigned_int_types =
    type_list<native<std::uint8_t>, native<std::uint16_t>, native<std::uint32_t>, native<std::uint64_t>>;
using int_types = concat<signed_int_types, unsigned_int_types>;
using signed_types = concat<float_types, signed_int_types>;
using numeric_types = concat<float_types, int_types>;
using all_types = concat<numeric_types, type_list<boolean>>;
using bool_types = type_list<boolean>;

template <class... Es, class Fn>
bool dispatch_in(type_list<Es...>, data_type t, Fn& fn) {
  bool done = false;
  ((!done && t == Es::type ? (fn(Es{}), done = true) : false), ...);
  return done;
}

/// Calls fn(E{}) with E the trait of `t` among `List`; element types outside the list are
/// unsupported (the spec may allow them, this executor does not compute them).
template <class List, class Fn>
void dispatch(const kernel_context& ctx, data_type t, Fn&& fn) {
  if (!dispatch_in(List{}, t, fn)) {
    ctx.unsupported("element type " + std::string(ir::to_string(t)) + " is not supported");
  }
}

/// Whether `t` is in `List`.
template <class List>
bool contains(data_type t) {
  bool found = false;
  auto probe = [&](auto) { found = true; };
  dispatch_in(List{}, t, probe);
  return found;
}

// ---- integer arithmetic that wraps instead of overflowing ----------------------------------

/// The unsigned type signed arithmetic on T wraps through (never narrower than unsigned int,
/// so int8/int16 products do not overflow int after promotion).
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
constexpr T wrapping_add(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b));
  } else {
    return a + b;
  }
}
template <class T>
constexpr T wrapping_sub(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b));
  } else {
    return a - b;
  }
}
template <class T>
constexpr T wrapping_mul(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b));
  } else {
    return a * b;
  }
}
template <class T>
constexpr T wrapping_neg(T a) noexcept {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(wrap_t<T>{0} - static_cast<wrap_t<T>>(a));
  } else {
    return -a;
  }
}

/// A float value as integer T: truncated toward zero, NaN as 0, out-of-range values saturated
/// (ONNX leaves them undefined; saturation keeps the result defined and monotonic).
template <class T>
T float_to_integer(double v) noexcept {
  if (v != v) return T(0);
  // The limits as doubles: lowest is exact; max may round up to 2^k, hence >=.
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace inferopt::runtime::elementwise
