// Indexed data movement: Gather, GatherElements, GatherND, ScatterElements (and the deprecated
// Scatter), ScatterND, Compress and NonZero. Every index read from data is checked against
// the dim it addresses before any memory is touched: a bad index fails naming the node.

#include <algorithm>
#include <cmath>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

/// Indices of input `i`, negative ones wrapped, each checked against `dim`.
std::vector<std::int64_t> checked_indices(const kernel_context& ctx, std::size_t i, std::int64_t dim) {
  std::vector<std::int64_t> idx = int_values(ctx, i, "indices");
  for (std::int64_t& v : idx) {
    if (v < -dim || v >= dim) {
      ctx.fail("index " + std::to_string(v) + " is out of range for a dim of size " + std::to_string(dim));
    }
    if (v < 0) v += dim;
  }
  return idx;
}

class gather_kernel final : public kernel {
 public:
  explicit gather_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", 0)) {}
  void compute(kernel_context& ctx) override {
    const tensor& data = ctx.input(0);
    const tensor& indices = ctx.input(1);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, data.rank());
    const std::int64_t dim = data.dim(axis);
    const std::vector<std::int64_t> idx = checked_indices(ctx, 1, dim);
    const shape_t out_shape = ir::shape_rules::gather_shape<std::int64_t>(data.shape(), indices.shape(), static_cast<std::int64_t>(axis));
    const std::size_t width = element_width(ctx, data.dtype());
    tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
    const std::int64_t outer = detail::product(data.shape(), 0, axis);
    const std::int64_t inner = detail::product(data.shape(), axis + 1);
    const auto m = static_cast<std::int64_t>(idx.size());
    if (out.element_count() == 0) return;
    const std::byte* src = bytes_of(data);
    std::byte* dst = mutable_bytes_of(out);
    if (inner == 1) {
      dispatch_width(width, [&](auto w) {
        using W = decltype(w);
        for (std::int64_t o = 0; o < outer; ++o) {
          for (std::int64_t j = 0; j < m; ++j) {
            store<W>(dst + (o * m + j) * sizeof(W), load<W>(src + (o * dim + idx[j]) * sizeof(W)));
          }
        }
      });
      return;
    }
    const auto block = static_cast<std::size_t>(inner) * width;
    detail::parallel_for(ctx.threads(), outer * m, std::max<std::int64_t>(1, 16384 / inner), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) {
        const std::int64_t o = r / m, j = r % m;
        std::memcpy(dst + r * block, src + (o * dim + idx[j]) * block, block);
      }
    });
  }

 private:
  std::int64_t axis_;
};

/// Walks a row-major index space, tracking an offset into another tensor with strides.
class index_walker {
 public:
  index_walker(const shape_t& shape, std::vector<std::int64_t> strides) : shape_(shape), strides_(std::move(strides)), index_(shape.size(), 0) {}
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }
  [[nodiscard]] std::int64_t index(std::size_t k) const noexcept { return index_[k]; }
  void next() noexcept {
    for (std::size_t k = shape_.size(); k-- > 0;) {
      ++index_[k];
      offset_ += strides_[k];
      if (index_[k] < shape_[k]) return;
      offset_ -= strides_[k] * shape_[k];
      index_[k] = 0;
    }
  }

 private:
  shape_t shape_;
  std::vector<std::int64_t> strides_;
  std::vector<std::int64_t> index_;
  std::int64_t offset_ = 0;
};

/// Checks that `indices` may address `data` element-wise along `axis` (same rank, no dim
/// larger than the data's outside the axis).
void check_elementwise_indices(const kernel_context& ctx, const tensor& data, const shape_t& indices, std::size_t axis) {
  bool fits = indices.size() == data.rank();
  for (std::size_t k = 0; fits && k < indices.size(); ++k) fits = k == axis || indices[k] <= data.dim(k);
  if (!fits) ctx.fail("indices of shape " + to_string(indices) + " do not fit data of shape " + to_string(data.shape()));
}

class gather_elements_kernel final : public kernel {
 public:
  explicit gather_elements_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", 0)) {}
  void compute(kernel_context& ctx) override {
    const tensor& data = ctx.input(0);
    const tensor& indices = ctx.input(1);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, data.rank());
    check_elementwise_indices(ctx, data, indices.shape(), axis);
    const std::int64_t dim = data.dim(axis);
    const std::vector<std::int64_t> idx = checked_indices(ctx, 1, dim);
    const std::size_t width = element_width(ctx, data.dtype());
    tensor& out = ctx.allocate_output(0, data.dtype(), indices.shape());
    std::vector<std::int64_t> strides = detail::strides_of(data.shape());
    const std::int64_t axis_stride = strides[axis];
    strides[axis] = 0;
    const std::byte* src = bytes_of(data);
    std::byte* dst = mutable_bytes_of(out);
    dispatch_width(width, [&](auto w) {
      using W = decltype(w);
      index_walker walk(indices.shape(), strides);
      for (std::size_t k = 0; k < idx.size(); ++k, walk.next()) {
        store<W>(dst + k * sizeof(W), load<W>(src + (walk.offset() + idx[k] * axis_stride) * sizeof(W)));
      }
    });
  }

 private:
  std::int64_t axis_;
};

class gather_nd_kernel final : public kernel {
 public:
  explicit gather_nd_kernel(const kernel_build_info& info) : batch_dims_(info.node.attr_int("batch_dims", 0)) {
    if (batch_dims_ < 0) info.fail("batch_dims must not be negative");
  }
  void compute(kernel_context& ctx) override {
    const tensor& data = ctx.input(0);
    const tensor& indices = ctx.input(1);
    const auto b = static_cast<std::size_t>(batch_dims_);
    if (indices.rank() < 1 || indices.rank() <= b || data.rank() <= b) {
      ctx.fail("batch_dims " + std::to_string(b) + " does not fit data " + to_string(data.shape()) + " and indices " +
               to_string(indices.shape()));
    }
    const std::int64_t k = indices.dim(indices.rank() - 1);
    if (k < 1 || static_cast<std::size_t>(k) > data.rank() - b) {
      ctx.fail("indices of shape " + to_string(indices.shape()) + " cannot address data of shape " + to_string(data.shape()));
    }
    for (std::size_t d = 0; d < b; ++d) {
      if (data.dim(d) != indices.dim(d)) {
        ctx.fail("batch dims of data " + to_string(data.shape()) + " and indices " + to_string(indices.shape()) + " differ");
      }
    }
    shape_t out_shape(indices.shape().begin(), indices.shape().end() - 1);
    out_shape.insert(out_shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(b) + k, data.shape().end());
    const std::vector<std::int64_t> idx = int_values(ctx, 1, "indices");
    const std::size_t width = element_width(ctx, data.dtype());
    tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
    const std::vector<std::int64_t> strides = detail::strides_of(data.shape());
    const std::int64_t batches = detail::product(data.shape(), 0, b);
    const std::int64_t batch_size = detail::product(data.shape(), b);
    const std::int64_t block = detail::product(data.shape(), b + static_cast<std::size_t>(k)) * static_cast<std::int64_t>(width);
    const std::int64_t tuples = static_cast<std::int64_t>(idx.size()) / k;
    if (tuples == 0) return;
    const std::int64_t per_batch = tuples / batches;
    const std::byte* src = bytes_of(data);
    std::byte* dst = mutable_bytes_of(out);
    for (std::int64_t t = 0; t < tuples; ++t) {
      std::int64_t offset = (t / per_batch) * batch_size;
      for (std::int64_t j = 0; j < k; ++j) {
        const std::size_t axis = b + static_cast<std::size_t>(j);
        std::int64_t v = idx[static_cast<std::size_t>(t * k + j)];
        const std::int64_t dim = data.dim(axis);
        if (v < -dim || v >= dim) ctx.fail("index " + std::to_string(v) + " is out of range for a dim of size " + std::to_string(dim));
        offset += (v < 0 ? v + dim : v) * strides[axis];
      }
      std::memcpy(dst + t * block, src + offset * static_cast<std::int64_t>(width), static_cast<std::size_t>(block));
    }
  }

 private:
  std::int64_t batch_dims_;
};

enum class reduction { none, add, mul, max, min };

reduction read_reduction(const kernel_build_info& info) {
  const std::string r = info.node.attr_string("reduction", "none");
  if (r == "none") return reduction::none;
  if (r == "add") return reduction::add;
  if (r == "mul") return reduction::mul;
  if (r == "max" && info.opset >= 18) return reduction::max;
  if (r == "min" && info.opset >= 18) return reduction::min;
  info.fail("reduction '" + r + "' is not valid at opset " + std::to_string(info.opset));
}

template <class T>
T combine(reduction r, T a, T b) {
  switch (r) {
    case reduction::add: return static_cast<T>(a + b);
    case reduction::mul: return static_cast<T>(a * b);
    case reduction::max: return static_cast<T>(std::max<decltype(a + b)>(a, b));
    case reduction::min: return static_cast<T>(std::min<decltype(a + b)>(a, b));
    case reduction::none: break;
  }
  return b;
}

/// Writes update `u` (element index) into output element `o`, combining by `r`.
void scatter_one(reduction r, data_type type, std::size_t width, std::byte* out, std::int64_t o, const std::byte* updates,
                 std::int64_t u) {
  const auto w = static_cast<std::int64_t>(width);
  if (r == reduction::none) {
    std::memcpy(out + o * w, updates + u * w, width);
    return;
  }
  auto apply = [&](auto tag) {
    using T = decltype(tag);
    T a, b;
    std::memcpy(&a, out + o * w, sizeof(T));
    std::memcpy(&b, updates + u * w, sizeof(T));
    const T c = combine<T>(r, a, b);
    std::memcpy(out + o * w, &c, sizeof(T));
  };
  switch (type) {
    case data_type::float32: apply(float{}); break;
    case data_type::float64: apply(double{}); break;
    case data_type::float16: {
      half_t a, b;
      std::memcpy(&a, out + o * w, 2);
      std::memcpy(&b, updates + u * w, 2);
      const half_t c(combine<float>(r, a, b));
      std::memcpy(out + o * w, &c, 2);
      break;
    }
    case data_type::int8: apply(std::int8_t{}); break;
    case data_type::uint8: apply(std::uint8_t{}); break;
    case data_type::int16: apply(std::int16_t{}); break;
    case data_type::uint16: apply(std::uint16_t{}); break;
    case data_type::int32: apply(std::int32_t{}); break;
    case data_type::uint32: apply(std::uint32_t{}); break;
    case data_type::int64: apply(std::int64_t{}); break;
    case data_type::uint64: apply(std::uint64_t{}); break;
    default: break;  // refused before the first update
  }
}

void check_reducible(const kernel_context& ctx, reduction r, data_type t) {
  if (r == reduction::none) return;
  switch (t) {
    case data_type::boolean:
    case data_type::bfloat16:
    case data_type::complex64:
    case data_type::complex128:
      ctx.unsupported("reduction on " + std::string(ir::to_string(t)) + " is not supported");
    default: return;
  }
}

class scatter_elements_kernel final : public kernel {
 public:
  explicit scatter_elements_kernel(const kernel_build_info& info)
      : axis_(info.node.attr_int("axis", 0)), reduction_(read_reduction(info)) {}
  void compute(kernel_context& ctx) override {
    const tensor& data = ctx.input(0);
    const tensor& indices = ctx.input(1);
    const tensor& updates = ctx.input(2);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, data.rank());
    if (updates.shape() != indices.shape()) {
      ctx.fail("updates of shape " + to_string(updates.shape()) + " do not match indices of shape " + to_string(indices.shape()));
    }
    if (updates.dtype() != data.dtype()) ctx.fail("updates and data have different element types");
    check_elementwise_indices(ctx, data, indices.shape(), axis);
    check_reducible(ctx, reduction_, data.dtype());
    const std::vector<std::int64_t> idx = checked_indices(ctx, 1, data.dim(axis));
    const std::size_t width = element_width(ctx, data.dtype());
    tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
    std::memcpy(out.mutable_raw(), data.raw(), data.byte_size());
    std::vector<std::int64_t> strides = detail::strides_of(data.shape());
    const std::int64_t axis_stride = strides[axis];
    strides[axis] = 0;
    index_walker walk(indices.shape(), strides);
    std::byte* dst = mutable_bytes_of(out);
    for (std::size_t k = 0; k < idx.size(); ++k, walk.next()) {
      scatter_one(reduction_, data.dtype(), width, dst, walk.offset() + idx[k] * axis_stride, bytes_of(updates),
                  static_cast<std::int64_t>(k));
    }
  }

 private:
  std::int64_t axis_;
  reduction reduction_;
};

class scatter_nd_kernel final : public kernel {
 public:
  explicit scatter_nd_kernel(const kernel_build_info& info) : reduction_(read_reduction(info)) {}
  void compute(kernel_context& ctx) override {
    const tensor& data = ctx.input(0);
    const tensor& indices = ctx.input(1);
    const tensor& updates = ctx.input(2);
    if (indices.rank() < 1) ctx.fail("indices must have rank >= 1");
    const std::int64_t k = indices.dim(indices.rank() - 1);
    if (k < 0 || static_cast<std::size_t>(k) > data.rank()) {
      ctx.fail("indices of shape " + to_string(indices.shape()) + " cannot address data of shape " + to_string(data.shape()));
    }
    shape_t expected(indices.shape().begin(), indices.shape().end() - 1);
    expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != expected) {
      ctx.fail("updates of shape " + to_string(updates.shape()) + " should have shape " + to_string(expected));
    }
    if (updates.dtype() != data.dtype()) ctx.fail("updates and data have different element types");
    check_reducible(ctx, reduction_, data.dtype());
    const std::vector<std::int64_t> idx = int_values(ctx, 1, "indices");
    const std::size_t width = element_width(ctx, data.dtype());
    tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
    std::memcpy(out.mutable_raw(), data.raw(), data.byte_size());
    const std::vector<std::int64_t> strides = detail::strides_of(data.shape());
    const std::int64_t block = detail::product(data.shape(), static_cast<std::size_t>(k));
    const std::int64_t tuples = detail::product(expected, 0, indices.rank() - 1);
    std::byte* dst = mutable_bytes_of(out);
    for (std::int64_t t = 0; t < tuples; ++t) {
      std::int64_t offset = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        const auto axis = static_cast<std::size_t>(j);
        std::int64_t v = idx[static_cast<std::size_t>(t * k + j)];
        const std::int64_t dim = data.dim(axis);
        if (v < -dim || v >= dim) ctx.fail("index " + std::to_string(v) + " is out of range for a dim of size " + std::to_string(dim));
        offset += (v < 0 ? v + dim : v) * strides[axis];
      }
      for (std::int64_t e = 0; e < block; ++e) {
        scatter_one(reduction_, data.dtype(), width, dst, offset + e, bytes_of(updates), t * block + e);
      }
    }
  }

 private:
  reduction reduction_;
};

class compress_kernel final : public kernel {
 public:
  explicit compress_kernel(const kernel_build_info& info)
      : has_axis_(info.node.find_attribute("axis") != nullptr), axis_(info.node.attr_int("axis", 0)) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& condition = ctx.input(1);
    if (condition.dtype() != data_type::boolean || condition.rank() != 1) ctx.fail("condition must be a 1-D bool tensor");
    const tensor data = has_axis_ ? x : x.reshaped({x.element_count()});
    const std::size_t axis = has_axis_ ? detail::normalize_axis(ctx, axis_, x.rank()) : 0;
    const std::int64_t dim = data.dim(axis);
    const std::uint8_t* keep = condition.data<std::uint8_t>();
    std::vector<std::int64_t> selected;
    for (std::int64_t k = 0; k < condition.element_count(); ++k) {
      if (!keep[k]) continue;
      if (k >= dim) ctx.fail("condition selects index " + std::to_string(k) + " beyond dim " + std::to_string(dim));
      selected.push_back(k);
    }
    shape_t out_shape = data.shape();
    out_shape[axis] = static_cast<std::int64_t>(selected.size());
    const std::size_t width = element_width(ctx, x.dtype());
    tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    const std::int64_t outer = detail::product(data.shape(), 0, axis);
    const auto block = static_cast<std::size_t>(detail::product(data.shape(), axis + 1)) * width;
    const std::byte* src = bytes_of(data);
    std::byte* dst = mutable_bytes_of(out);
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t s : selected) {
        std::memcpy(dst, src + static_cast<std::size_t>(o * dim + s) * block, block);
        dst += block;
      }
    }
  }

 private:
  bool has_axis_;
  std::int64_t axis_;
};

template <class T>
bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v != 0.0;  // NaN counts as non-zero
  } else if constexpr (is_floating_v<T>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T{0};
  }
}

class non_zero_kernel final : public kernel {
 public:
  explicit non_zero_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    // A scalar is treated as a one-element vector.
    const shape_t shape = x.rank() == 0 ? shape_t{1} : x.shape();
    std::vector<std::int64_t> flat;
    auto collect = [&](auto tag) {
      using T = decltype(tag);
      const T* p = typed<T>(x);
      for (std::int64_t k = 0; k < x.element_count(); ++k) {
        if (is_nonzero<T>(p[k])) flat.push_back(k);
      }
    };
    if (x.dtype() == data_type::boolean) {
      collect(std::uint8_t{});
    } else {
      dispatch_types(ctx, x.dtype(), numeric_types{}, collect);
    }
    const auto n = static_cast<std::int64_t>(flat.size());
    tensor& out = ctx.allocate_output(0, data_type::int64, {static_cast<std::int64_t>(shape.size()), n});
    std::int64_t* o = out.mutable_data<std::int64_t>();
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t rest = flat[static_cast<std::size_t>(j)];
      for (std::size_t d = shape.size(); d-- > 0;) {
        o[static_cast<std::int64_t>(d) * n + j] = rest % shape[d];
        rest /= shape[d];
      }
    }
  }
};

}  // namespace

void register_gather_kernels(kernel_registry& r) {
  r.add("", "Gather", factory<gather_kernel>());
  r.add("", "GatherElements", factory<gather_elements_kernel>(), 11);
  r.add("", "GatherND", factory<gather_nd_kernel>(), 11);
  r.add("", "Scatter", factory<scatter_elements_kernel>(), 9, 10);
  r.add("", "ScatterElements", factory<scatter_elements_kernel>(), 11);
  r.add("", "ScatterND", factory<scatter_nd_kernel>(), 11);
  r.add("", "Compress", factory<compress_kernel>(), 9);
  r.add("", "NonZero", factory<non_zero_kernel>(), 9);
}

}  // namespace inferopt::runtime::shape_detail
