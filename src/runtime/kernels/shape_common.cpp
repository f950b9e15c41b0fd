#include "shape_common.hpp"

#include <algorithm>
#include <cmath>

namespace inferopt::runtime::shape_detail {

std::size_t element_width(const kernel_context& ctx, data_type t) {
  const std::size_t width = ir::element_size(t);
  if (width == 0) ctx.unsupported("element type " + std::string(ir::to_string(t)) + " is not supported");
  return width;
}

namespace {

template <class T>
void put(element_value& out, T v) {
  static_assert(sizeof(T) <= sizeof(out.bytes));
  std::memcpy(out.bytes.data(), &v, sizeof(T));
}

// static_cast of an out-of-range double to an integer is undefined; saturate instead.
template <class T>
T saturate(double v) {
  if (std::isnan(v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

element_value make_element(data_type type, double v) {
  element_value out;
  switch (type) {
    case data_type::float32: put(out, static_cast<float>(v)); break;
    case data_type::float64: put(out, v); break;
    case data_type::float16: put(out, inferopt::float_to_half(static_cast<float>(v))); break;
    case data_type::bfloat16: put(out, inferopt::float_to_bfloat16(static_cast<float>(v))); break;
    case data_type::boolean: put(out, static_cast<std::uint8_t>(v != 0.0)); break;
    case data_type::int8: put(out, saturate<std::int8_t>(v)); break;
    case data_type::uint8: put(out, saturate<std::uint8_t>(v)); break;
    case data_type::int16: put(out, saturate<std::int16_t>(v)); break;
    case data_type::uint16: put(out, saturate<std::uint16_t>(v)); break;
    case data_type::int32: put(out, saturate<std::int32_t>(v)); break;
    case data_type::uint32: put(out, saturate<std::uint32_t>(v)); break;
    case data_type::int64: put(out, saturate<std::int64_t>(v)); break;
    case data_type::uint64: put(out, saturate<std::uint64_t>(v)); break;
    default: break;  // zero bytes: the only value we can give without knowing the encoding
  }
  return out;
}

element_value element_of(const tensor& t, std::int64_t index) {
  element_value out;
  const std::size_t width = ir::element_size(t.dtype());
  std::memcpy(out.bytes.data(), bytes_of(t) + static_cast<std::size_t>(index) * width, std::min(width, out.bytes.size()));
  return out;
}

void fill(std::byte* dst, std::size_t width, const element_value& v, std::int64_t count) {
  if (count <= 0) return;
  bool all_zero = true;
  for (std::size_t k = 0; k < width; ++k) all_zero = all_zero && v.bytes[k] == std::byte{0};
  if (all_zero) {
    std::memset(dst, 0, static_cast<std::size_t>(count) * width);
    return;
  }
  dispatch_width(width, [&](auto w) {
    using W = decltype(w);
    const W value = load<W>(v.bytes.data());
    for (std::int64_t k = 0; k < count; ++k) store<W>(dst + k * sizeof(W), value);
  });
}

// ---- strided copy ----------------------------------------------------------------------------

namespace {

constexpr std::int64_t tile = 32;

// Copies rows: the innermost dim is walked with its stride, outer dims with a counter.
template <class W>
void copy_rows(const std::byte* src, std::byte* dst, const shape_t& shape, const std::vector<std::int64_t>& strides,
               int threads) {
  const std::size_t rank = shape.size();
  const std::int64_t inner = shape[rank - 1];
  const std::int64_t inner_stride = strides[rank - 1];
  const std::int64_t rows = detail::product(shape) / inner;
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(inner, 1));
  detail::parallel_for(threads, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int64_t> index(rank - 1, 0);
    std::int64_t offset = 0;
    std::int64_t rest = begin;
    for (std::size_t k = rank - 1; k-- > 0;) {
      index[k] = rest % shape[k];
      rest /= shape[k];
      offset += index[k] * strides[k];
    }
    for (std::int64_t row = begin; row < end; ++row) {
      std::byte* out = dst + row * inner * static_cast<std::int64_t>(sizeof(W));
      if (inner_stride == 1) {
        std::memcpy(out, src + offset * static_cast<std::int64_t>(sizeof(W)), static_cast<std::size_t>(inner) * sizeof(W));
      } else {
        const std::byte* in = src + offset * static_cast<std::int64_t>(sizeof(W));
        const std::int64_t step = inner_stride * static_cast<std::int64_t>(sizeof(W));
        for (std::int64_t j = 0; j < inner; ++j) store<W>(out + j * static_cast<std::int64_t>(sizeof(W)), load<W>(in + j * step));
      }
      for (std::size_t k = rank - 1; k-- > 0;) {
        ++index[k];
        offset += strides[k];
        if (index[k] < shape[k]) break;
        offset -= strides[k] * shape[k];
        index[k] = 0;
      }
    }
  });
}

// A transposing copy: dim `p` is contiguous in the source, the last dim in the destination.
// Walking either one alone strides through memory for the other, so both are tiled.
template <class W>
void copy_transposed(const std::byte* src, std::byte* dst, const shape_t& shape, const std::vector<std::int64_t>& strides,
                     std::size_t p, int threads) {
  const std::size_t rank = shape.size();
  const std::vector<std::int64_t> dst_strides = detail::strides_of(shape);
  std::vector<std::size_t> outer_dims;
  for (std::size_t k = 0; k + 1 < rank; ++k) {
    if (k != p) outer_dims.push_back(k);
  }
  std::int64_t outer = 1;
  for (std::size_t k : outer_dims) outer *= shape[k];
  const std::int64_t rows = shape[p];
  const std::int64_t cols = shape[rank - 1];
  const std::int64_t row_tiles = (rows + tile - 1) / tile;
  const std::int64_t dst_row_stride = dst_strides[p];
  const std::int64_t src_col_stride = strides[rank - 1];
  constexpr auto w = static_cast<std::int64_t>(sizeof(W));
  detail::parallel_for(threads, outer * row_tiles, 4, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t unit = begin; unit < end; ++unit) {
      std::int64_t rest = unit / row_tiles;
      const std::int64_t i0 = (unit % row_tiles) * tile;
      std::int64_t src_base = 0;
      std::int64_t dst_base = 0;
      for (std::size_t q = outer_dims.size(); q-- > 0;) {
        const std::size_t k = outer_dims[q];
        const std::int64_t idx = rest % shape[k];
        rest /= shape[k];
        src_base += idx * strides[k];
        dst_base += idx * dst_strides[k];
      }
      const std::int64_t i1 = std::min(rows, i0 + tile);
      for (std::int64_t j0 = 0; j0 < cols; j0 += tile) {
        const std::int64_t j1 = std::min(cols, j0 + tile);
        for (std::int64_t i = i0; i < i1; ++i) {
          std::byte* out = dst + (dst_base + i * dst_row_stride) * w;
          const std::byte* in = src + (src_base + i) * w;
          for (std::int64_t j = j0; j < j1; ++j) store<W>(out + j * w, load<W>(in + j * src_col_stride * w));
        }
      }
    }
  });
}

}  // namespace

void strided_copy(const std::byte* src, std::byte* dst, std::size_t width, shape_t shape, std::vector<std::int64_t> strides,
                  int threads) {
  for (std::int64_t d : shape) {
    if (d == 0) return;  // checked dim by dim: the product of the other dims may overflow
  }
  // Drop unit dims, then merge neighbours that are contiguous with each other in the source.
  shape_t dims;
  std::vector<std::int64_t> steps;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!dims.empty() && steps.back() == strides[k] * shape[k]) {
      dims.back() *= shape[k];
      steps.back() = strides[k];
    } else {
      dims.push_back(shape[k]);
      steps.push_back(strides[k]);
    }
  }
  if (dims.empty()) {
    std::memcpy(dst, src, width);
    return;
  }
  std::size_t contiguous = dims.size();
  if (steps.back() != 1) {
    for (std::size_t k = 0; k + 1 < dims.size(); ++k) {
      if (steps[k] == 1 && dims[k] >= 4 && dims.back() >= 4) contiguous = k;
    }
  }
  dispatch_width(width, [&](auto w) {
    using W = decltype(w);
    if (contiguous < dims.size()) {
      copy_transposed<W>(src, dst, dims, steps, contiguous, threads);
    } else {
      copy_rows<W>(src, dst, dims, steps, threads);
    }
  });
}

// ---- inputs --------------------------------------------------------------------------------

std::vector<std::int64_t> int_values(const kernel_context& ctx, std::size_t i, std::string_view what) {
  const tensor& t = ctx.input(i);
  switch (t.dtype()) {
    case data_type::int64:
    case data_type::int32:
    case data_type::int16:
    case data_type::int8:
    case data_type::uint8:
    case data_type::uint16:
    case data_type::uint32:
    case data_type::uint64: return t.to_int64();
    default:
      ctx.fail(std::string(what) + " must be an integer tensor, got " + std::string(ir::to_string(t.dtype())));
  }
}

std::int64_t int_scalar(const kernel_context& ctx, std::size_t i, std::string_view what) {
  std::vector<std::int64_t> v = int_values(ctx, i, what);
  if (v.size() != 1) ctx.fail(std::string(what) + " must hold one value, got shape " + to_string(ctx.input(i).shape()));
  return v[0];
}

std::vector<double> float_values(const kernel_context& ctx, std::size_t i, std::string_view what) {
  const tensor& t = ctx.input(i);
  switch (t.dtype()) {
    case data_type::float64: {
      const double* p = typed<double>(t);
      return {p, p + t.element_count()};
    }
    case data_type::float32:
    case data_type::float16:
    case data_type::bfloat16: {
      std::vector<float> f = t.to_float();
      return {f.begin(), f.end()};
    }
    default:
      ctx.fail(std::string(what) + " must be a float tensor, got " + std::string(ir::to_string(t.dtype())));
  }
}

std::vector<std::size_t> normalize_axes(const kernel_context& ctx, std::span<const std::int64_t> axes, std::size_t rank) {
  std::vector<std::size_t> out;
  std::vector<bool> seen(rank, false);
  for (std::int64_t a : axes) {
    const std::size_t k = detail::normalize_axis(ctx, a, rank);
    if (seen[k]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    seen[k] = true;
    out.push_back(k);
  }
  return out;
}

}  // namespace inferopt::runtime::shape_detail
