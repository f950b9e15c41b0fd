#pragma once
// Pieces shared by the shape and reduce kernel families (private to src/runtime/kernels):
// element-width dispatch for type-agnostic data movement, a strided copy engine that
// Transpose, Slice, Expand, Tile and DepthToSpace reduce to, typed dispatch that includes
// float16/bfloat16, and the small input/attribute readers every kernel repeats.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/core/float16.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "kernel_util.hpp"

namespace inferopt::runtime::shape_detail {

// ---- family registration (each file fills its part of the registry) ------------------------
void register_view_kernels(kernel_registry& r);       // shape_ops.cpp
void register_transpose_kernels(kernel_registry& r);  // shape_transpose.cpp
void register_concat_split_kernels(kernel_registry& r);
void register_slice_kernels(kernel_registry& r);      // Slice, Expand, Tile
void register_gather_kernels(kernel_registry& r);     // Gather*, Scatter*, Compress, NonZero
void register_constant_kernels(kernel_registry& r);   // Constant*, Range, EyeLike, OneHot, Trilu
void register_pad_kernels(kernel_registry& r);
void register_resize_kernels(kernel_registry& r);     // Resize, Upsample
void register_cumsum_kernels(kernel_registry& r);     // reduce_cumsum.cpp

/// A factory that constructs `K` from the build info (K's constructor validates attributes).
template <class K>
kernel_factory factory() {
  return [](const kernel_build_info& info) -> std::unique_ptr<kernel> { return std::make_unique<K>(info); };
}

// ---- element widths ------------------------------------------------------------------------

/// 16 bytes moved as one unit (complex128).
struct bytes16 {
  std::uint64_t lo, hi;
};

/// Bytes per element; strings and sub-byte types are reported as unsupported.
std::size_t element_width(const kernel_context& ctx, data_type t);

/// Calls fn(W{}) with W an unsigned integer (or `bytes16`) as wide as one element.
template <class Fn>
void dispatch_width(std::size_t width, Fn&& fn) {
  switch (width) {
    case 1: fn(std::uint8_t{}); break;
    case 2: fn(std::uint16_t{}); break;
    case 4: fn(std::uint32_t{}); break;
    case 8: fn(std::uint64_t{}); break;
    default: fn(bytes16{}); break;
  }
}

template <class W>
inline W load(const std::byte* p) noexcept {
  W w;
  std::memcpy(&w, p, sizeof(W));
  return w;
}
template <class W>
inline void store(std::byte* p, W w) noexcept {
  std::memcpy(p, &w, sizeof(W));
}

/// One element of `type` holding `v` converted as static_cast would (bool: v != 0;
/// float16/bfloat16 rounded to nearest even).
struct element_value {
  std::array<std::byte, 16> bytes{};
};
element_value make_element(data_type type, double v);
/// Copies element `index` of `t` (for scalar inputs such as Pad's constant_value).
element_value element_of(const tensor& t, std::int64_t index);
/// Writes `count` copies of one element.
void fill(std::byte* dst, std::size_t width, const element_value& v, std::int64_t count);

// ---- strided copy --------------------------------------------------------------------------

/// dst (contiguous, row-major over `shape`) = src[sum_k index_k * strides_k], strides in
/// elements (zero for broadcast dims, negative for reversed ones). Dims of size 1 are dropped
/// and dims that stay contiguous are merged first; rows are memcpy'd when the innermost
/// stride is 1, and a transposing copy is done in cache blocks.
void strided_copy(const std::byte* src, std::byte* dst, std::size_t width, shape_t shape, std::vector<std::int64_t> strides,
                  int threads);

// ---- inputs and attributes -----------------------------------------------------------------

/// The values of integer input `i` (a shape, axes, repeats); fails naming the node when the
/// input is not of an integer type.
std::vector<std::int64_t> int_values(const kernel_context& ctx, std::size_t i, std::string_view what);
/// A scalar (or one-element) integer input.
std::int64_t int_scalar(const kernel_context& ctx, std::size_t i, std::string_view what);
/// The values of a float input (scales, roi) as double.
std::vector<double> float_values(const kernel_context& ctx, std::size_t i, std::string_view what);

/// Axes resolved against `rank`; fails for an axis out of range or given twice.
std::vector<std::size_t> normalize_axes(const kernel_context& ctx, std::span<const std::int64_t> axes, std::size_t rank);

/// Bytes of a tensor for reading.
inline const std::byte* bytes_of(const tensor& t) noexcept { return static_cast<const std::byte*>(t.raw()); }
inline std::byte* mutable_bytes_of(tensor& t) { return static_cast<std::byte*>(t.mutable_raw()); }

// ---- typed dispatch including float16 ------------------------------------------------------

/// float16 as a value type: arithmetic goes through float.
struct half_t {
  std::uint16_t bits;
  half_t() = default;
  half_t(float f) noexcept : bits(inferopt::float_to_half(f)) {}  // NOLINT: implicit on purpose
  operator float() const noexcept { return inferopt::half_to_float(bits); }
};
/// bfloat16 as a value type.
struct bfloat16_t {
  std::uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) noexcept : bits(inferopt::float_to_bfloat16(f)) {}  // NOLINT
  operator float() const noexcept { return inferopt::bfloat16_to_float(bits); }
};
static_assert(sizeof(half_t) == 2 && sizeof(bfloat16_t) == 2);

template <class T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>;

template <class T>
constexpr data_type dtype_of() noexcept {
  if constexpr (std::is_same_v<T, half_t>) return data_type::float16;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return data_type::bfloat16;
  else return ir::data_type_of<T>();
}

/// A list of element types to dispatch over.
template <class... Ts>
struct type_list {};
/// Every numeric type, float16 and bfloat16 included.
using numeric_types = type_list<float, double, half_t, bfloat16_t, std::int8_t, std::uint8_t, std::int16_t,
                                std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;
using float_types = type_list<float, double, half_t, bfloat16_t>;

/// Calls fn(T{}) for the element type `t` among the list's types; fails naming the node for
/// any other type.
template <class... Ts, class Fn>
void dispatch_types(const kernel_context& ctx, data_type t, type_list<Ts...>, Fn&& fn) {
  bool done = false;
  ((!done && t == dtype_of<Ts>() ? (fn(Ts{}), done = true) : false), ...);
  if (!done) ctx.fail("element type " + std::string(ir::to_string(t)) + " is not supported");
}

template <class T>
inline const T* typed(const tensor& t) noexcept {
  return static_cast<const T*>(t.raw());
}
template <class T>
inline T* typed_mutable(tensor& t) {
  return static_cast<T*>(t.mutable_raw());
}

}  // namespace inferopt::runtime::shape_detail
