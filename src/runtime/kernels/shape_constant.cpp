// Kernels that make tensors: Constant, ConstantOfShape, Range, EyeLike, OneHot and Trilu.
// Sizes that come from data (a shape, a range's length, a depth) are checked before the
// allocation, and the tensor constructor refuses anything absurdly large.

#include <algorithm>
#include <cmath>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

/// A read-only runtime view of values (so an output that shares it cannot be written).
template <class T>
tensor constant_of(shape_t shape, const std::vector<T>& values) {
  return tensor::from_ir(ir::tensor::from_values<T>("", std::move(shape), values));
}

class constant_kernel final : public kernel {
 public:
  explicit constant_kernel(const kernel_build_info& info) {
    const auto& attrs = info.node.attributes();
    if (attrs.size() != 1) info.fail("needs exactly one value attribute, got " + std::to_string(attrs.size()));
    const ir::attribute& a = attrs.front();
    if (a.name == "value") {
      if (a.tensors.empty()) info.fail("attribute 'value' holds no tensor");
      const ir::tensor& t = a.tensors.front();
      if (!t.has_data() || ir::element_size(t.dtype) == 0) {
        info.unsupported("constants of type " + std::string(ir::to_string(t.dtype)) + " are not supported");
      }
      value_ = tensor::from_ir(t);
    } else if (a.name == "value_float") {
      value_ = constant_of<float>({}, {a.f});
    } else if (a.name == "value_floats") {
      value_ = constant_of<float>({static_cast<std::int64_t>(a.floats.size())}, a.floats);
    } else if (a.name == "value_int") {
      value_ = constant_of<std::int64_t>({}, {a.i});
    } else if (a.name == "value_ints") {
      value_ = constant_of<std::int64_t>({static_cast<std::int64_t>(a.ints.size())}, a.ints);
    } else if (a.name == "value_string" || a.name == "value_strings" || a.name == "sparse_value") {
      info.unsupported("attribute '" + a.name + "' is not supported");
    } else {
      info.fail("unknown attribute '" + a.name + "'");
    }
  }
  void compute(kernel_context& ctx) override { ctx.set_output(0, value_); }

 private:
  tensor value_;
};

/// Reads a shape input: 1-D, non-negative dims.
shape_t shape_input(const kernel_context& ctx, std::size_t i) {
  if (ctx.input(i).rank() != 1) ctx.fail("shape must be 1-D, got shape " + to_string(ctx.input(i).shape()));
  shape_t shape = int_values(ctx, i, "shape");
  for (std::int64_t d : shape) {
    if (d < 0) ctx.fail("shape " + to_string(shape) + " has a negative dim");
  }
  return shape;
}

class constant_of_shape_kernel final : public kernel {
 public:
  explicit constant_of_shape_kernel(const kernel_build_info& info) {
    if (const ir::attribute* a = info.node.find_attribute("value")) {
      if (a->tensors.empty() || !a->tensors.front().has_data() || ir::element_size(a->tensors.front().dtype) == 0) {
        info.unsupported("attribute 'value' must be a numeric tensor");
      }
      const ir::tensor& t = a->tensors.front();
      if (t.element_count() != 1) info.fail("attribute 'value' must hold one element");
      type_ = t.dtype;
      std::memcpy(value_.bytes.data(), t.bytes->data(), ir::element_size(t.dtype));
    }
  }
  void compute(kernel_context& ctx) override {
    const shape_t shape = shape_input(ctx, 0);
    tensor& out = ctx.allocate_output(0, type_, shape);
    fill(mutable_bytes_of(out), ir::element_size(type_), value_, out.element_count());
  }

 private:
  data_type type_ = data_type::float32;
  element_value value_;  // zero by default
};

/// The one value of a scalar input, as T.
template <class T>
T scalar_of(const kernel_context& ctx, std::size_t i, const char* what) {
  const tensor& t = ctx.input(i);
  if (t.element_count() != 1) ctx.fail(std::string(what) + " must be a scalar, got shape " + to_string(t.shape()));
  return typed<T>(t)[0];
}

class range_kernel final : public kernel {
 public:
  explicit range_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const data_type type = ctx.input(0).dtype();
    if (ctx.input(1).dtype() != type || ctx.input(2).dtype() != type) ctx.fail("start, limit and delta differ in type");
    dispatch_types(ctx, type, type_list<float, double, half_t, bfloat16_t, std::int16_t, std::int32_t, std::int64_t>{}, [&](auto tag) {
      using T = decltype(tag);
      const T start = scalar_of<T>(ctx, 0, "start");
      const T limit = scalar_of<T>(ctx, 1, "limit");
      const T delta = scalar_of<T>(ctx, 2, "delta");
      if (static_cast<double>(delta) == 0.0) ctx.fail("delta is 0");
      std::int64_t n = 0;
      if constexpr (std::is_integral_v<T>) {
        // 128-bit: limit - start may overflow int64.
        const __int128 span = static_cast<__int128>(limit) - start;
        const __int128 count = span / delta + (span % delta != 0 && (span > 0) == (delta > 0) ? 1 : 0);
        n = count > 0 ? static_cast<std::int64_t>(std::min<__int128>(count, INT64_MAX)) : 0;
      } else {
        const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
        if (std::isnan(count)) ctx.fail("start, limit and delta give no finite length");
        if (count > 9.0e15) ctx.fail("the range has too many elements");
        n = count > 0 ? static_cast<std::int64_t>(count) : 0;
      }
      tensor& out = ctx.allocate_output(0, type, {n});
      T* o = typed_mutable<T>(out);
      for (std::int64_t k = 0; k < n; ++k) {
        if constexpr (std::is_integral_v<T>) {
          o[k] = static_cast<T>(start + static_cast<__int128>(k) * delta);  // in range; k * delta alone may not be
        } else {
          o[k] = static_cast<T>(static_cast<double>(start) + static_cast<double>(k) * static_cast<double>(delta));
        }
      }
    });
  }
};

class eye_like_kernel final : public kernel {
 public:
  explicit eye_like_kernel(const kernel_build_info& info) : k_(info.node.attr_int("k", 0)) {
    if (info.node.find_attribute("dtype")) {
      type_ = static_cast<data_type>(info.node.attr_int("dtype", 1));
      if (ir::element_size(type_) == 0) info.unsupported("dtype " + std::string(ir::to_string(type_)) + " is not supported");
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.rank() != 2) ctx.fail("input must be 2-D, got shape " + to_string(x.shape()));
    const data_type type = type_ == data_type::undefined ? x.dtype() : type_;
    const std::size_t width = element_width(ctx, type);
    tensor& out = ctx.allocate_output(0, type, x.shape());
    std::byte* dst = mutable_bytes_of(out);
    std::memset(dst, 0, out.byte_size());
    const element_value one = make_element(type, 1.0);
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    const std::int64_t k = std::clamp<std::int64_t>(k_, -rows, cols);  // beyond the matrix: no ones at all
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t j = i + k;
      if (j >= 0 && j < cols) std::memcpy(dst + static_cast<std::size_t>(i * cols + j) * width, one.bytes.data(), width);
    }
  }

 private:
  std::int64_t k_;
  data_type type_ = data_type::undefined;
};

/// Values of a numeric input as int64, truncating floats (OneHot's indices and depth).
std::vector<std::int64_t> truncated_ints(const kernel_context& ctx, std::size_t i, const char* what) {
  const tensor& t = ctx.input(i);
  switch (t.dtype()) {
    case data_type::float32:
    case data_type::float64:
    case data_type::float16:
    case data_type::bfloat16: {
      std::vector<double> v = float_values(ctx, i, what);
      std::vector<std::int64_t> out(v.size());
      for (std::size_t k = 0; k < v.size(); ++k) {
        if (!std::isfinite(v[k]) || std::abs(v[k]) > 9.0e18) ctx.fail(std::string(what) + " holds a non-finite or huge value");
        out[k] = static_cast<std::int64_t>(v[k]);
      }
      return out;
    }
    default: return int_values(ctx, i, what);
  }
}

class one_hot_kernel final : public kernel {
 public:
  explicit one_hot_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", -1)) {}
  void compute(kernel_context& ctx) override {
    const tensor& indices = ctx.input(0);
    const std::vector<std::int64_t> depth_values = truncated_ints(ctx, 1, "depth");
    if (depth_values.size() != 1) ctx.fail("depth must hold one value");
    const std::int64_t depth = depth_values[0];
    if (depth <= 0) ctx.fail("depth must be positive, got " + std::to_string(depth));
    const tensor& values = ctx.input(2);
    if (values.element_count() != 2) ctx.fail("values must hold [off, on], got shape " + to_string(values.shape()));
    const std::vector<std::int64_t> idx = truncated_ints(ctx, 0, "indices");
    const std::size_t axis = detail::normalize_axis(ctx, axis_, indices.rank() + 1);
    shape_t out_shape = indices.shape();
    out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    const std::size_t width = element_width(ctx, values.dtype());
    tensor& out = ctx.allocate_output(0, values.dtype(), out_shape);
    std::byte* dst = mutable_bytes_of(out);
    fill(dst, width, element_of(values, 0), out.element_count());
    const element_value on = element_of(values, 1);
    const std::int64_t inner = detail::product(indices.shape(), axis);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      std::int64_t v = idx[k];
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out of range: the row stays "off"
      const auto pos = static_cast<std::int64_t>(k);
      const std::int64_t o = pos / inner, i = pos % inner;
      std::memcpy(dst + static_cast<std::size_t>((o * depth + v) * inner + i) * width, on.bytes.data(), width);
    }
  }

 private:
  std::int64_t axis_;
};

class trilu_kernel final : public kernel {
 public:
  explicit trilu_kernel(const kernel_build_info& info) : upper_(info.node.attr_int("upper", 1) != 0) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("input must have rank >= 2, got shape " + to_string(x.shape()));
    const std::size_t width = element_width(ctx, x.dtype());
    tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
    const std::int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    // Any k beyond the matrix acts like the matrix edge; bounding it keeps i + k exact.
    const std::int64_t k = std::clamp<std::int64_t>(ctx.has_input(1) ? int_scalar(ctx, 1, "k") : 0, -rows - 1, cols + 1);
    const std::int64_t matrices = detail::product(x.shape(), 0, x.rank() - 2);
    const std::byte* src = bytes_of(x);
    std::byte* dst = mutable_bytes_of(out);
    const auto w = static_cast<std::int64_t>(width);
    for (std::int64_t m = 0; m < matrices; ++m) {
      for (std::int64_t i = 0; i < rows; ++i) {
        // Kept columns: j - i >= k (upper) or j - i <= k (lower), as [begin, end).
        const std::int64_t edge = std::clamp<std::int64_t>(i + k, -1, cols);
        const std::int64_t begin = upper_ ? std::max<std::int64_t>(edge, 0) : 0;
        const std::int64_t end = upper_ ? cols : std::min<std::int64_t>(edge + 1, cols);
        const std::int64_t row = (m * rows + i) * cols * w;
        std::memset(dst + row, 0, static_cast<std::size_t>(cols * w));
        if (end > begin) {
          std::memcpy(dst + row + begin * w, src + row + begin * w, static_cast<std::size_t>((end - begin) * w));
        }
      }
    }
  }

 private:
  bool upper_;
};

}  // namespace

void register_constant_kernels(kernel_registry& r) {
  r.add("", "Constant", factory<constant_kernel>());
  r.add("", "ConstantOfShape", factory<constant_of_shape_kernel>(), 9);
  r.add("", "Range", factory<range_kernel>(), 11);
  r.add("", "EyeLike", factory<eye_like_kernel>(), 9);
  r.add("", "OneHot", factory<one_hot_kernel>(), 9);
  r.add("", "Trilu", factory<trilu_kernel>(), 14);
}

}  // namespace inferopt::runtime::shape_detail
