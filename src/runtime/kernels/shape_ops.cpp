// Shape kernels that never move data: Reshape, Flatten, Squeeze and Unsqueeze return the input's
// storage under a new shape (zero copy), Shape and Size read only the shape. This file also
// fills the registry for the whole shape family.

#include <algorithm>

#include "shape_common.hpp"

namespace inferopt::runtime {

namespace shape_detail {
namespace {

/// Reshape's target: `0` copies the input dim (unless allowzero), `-1` is inferred.
shape_t reshape_target(const kernel_context& ctx, const shape_t& in, const std::vector<std::int64_t>& target,
                       bool allow_zero) {
  shape_t out(target.size(), 1);
  std::size_t inferred = SIZE_MAX;
  bool has_zero = false;
  for (std::size_t k = 0; k < target.size(); ++k) {
    const std::int64_t d = target[k];
    if (d == -1) {
      if (inferred != SIZE_MAX) ctx.fail("target shape " + to_string(target) + " has more than one -1");
      inferred = k;
    } else if (d == 0 && !allow_zero) {
      if (k >= in.size()) {
        ctx.fail("target shape " + to_string(target) + " copies dim " + std::to_string(k) + " of input shape " +
                 to_string(in) + ", which has no such dim");
      }
      out[k] = in[k];
    } else if (d < 0) {
      ctx.fail("target shape " + to_string(target) + " has a negative dim");
    } else {
      has_zero = has_zero || d == 0;
      out[k] = d;
    }
  }
  if (allow_zero && has_zero && inferred != SIZE_MAX) {
    ctx.fail("target shape " + to_string(target) + " has both 0 and -1 with allowzero set");
  }
  const std::int64_t count = detail::product(in);
  if (inferred != SIZE_MAX) {
    const std::int64_t known = ir::tensor::element_count(out);
    if (known <= 0 || count % known != 0) {
      ctx.fail("cannot reshape " + to_string(in) + " to " + to_string(target) + ": the -1 dim cannot be inferred");
    }
    out[inferred] = count / known;
  }
  if (ir::tensor::element_count(out) != count) ctx.fail("cannot reshape " + to_string(in) + " to " + to_string(target));
  return out;
}

class reshape_kernel final : public kernel {
 public:
  explicit reshape_kernel(const kernel_build_info& info)
      : allow_zero_(info.opset >= 14 && info.node.attr_int("allowzero", 0) != 0), from_attribute_(info.opset < 5) {
    if (from_attribute_) {
      if (!info.node.find_attribute("shape")) info.fail("attribute 'shape' is required before opset 5");
      shape_attr_ = info.node.attr_ints("shape", {});
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    std::vector<std::int64_t> target = shape_attr_;
    if (!from_attribute_) {
      if (ctx.input(1).rank() != 1) ctx.fail("shape must be 1-D, got shape " + to_string(ctx.input(1).shape()));
      target = int_values(ctx, 1, "shape");
    }
    ctx.set_output(0, x.reshaped(reshape_target(ctx, x.shape(), target, allow_zero_)));
  }

 private:
  bool allow_zero_;
  bool from_attribute_;
  std::vector<std::int64_t> shape_attr_;
};

class flatten_kernel final : public kernel {
 public:
  explicit flatten_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", 1)) {
    if (info.opset < 11 && axis_ < 0) info.fail("axis must not be negative before opset 11");
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const auto rank = static_cast<std::int64_t>(x.rank());
    if (axis_ < -rank || axis_ > rank) {
      ctx.fail("axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(rank));
    }
    const auto axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
    ctx.set_output(0, x.reshaped({detail::product(x.shape(), 0, axis), detail::product(x.shape(), axis)}));
  }

 private:
  std::int64_t axis_;
};

class squeeze_kernel final : public kernel {
 public:
  explicit squeeze_kernel(const kernel_build_info& info) : from_attribute_(info.opset < 13) {
    if (from_attribute_) {
      has_axes_ = info.node.find_attribute("axes") != nullptr;
      axes_ = info.node.attr_ints("axes", {});
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    std::vector<std::int64_t> axes = axes_;
    bool has_axes = has_axes_;
    if (!from_attribute_ && ctx.has_input(1)) {
      axes = int_values(ctx, 1, "axes");
      has_axes = true;
    }
    std::vector<bool> drop(x.rank(), false);
    if (has_axes) {
      for (std::size_t k : normalize_axes(ctx, axes, x.rank())) {
        if (x.dim(k) != 1) {
          ctx.fail("cannot squeeze axis " + std::to_string(k) + " of shape " + to_string(x.shape()) + ": it is not 1");
        }
        drop[k] = true;
      }
    } else {
      for (std::size_t k = 0; k < x.rank(); ++k) drop[k] = x.dim(k) == 1;
    }
    shape_t out;
    for (std::size_t k = 0; k < x.rank(); ++k) {
      if (!drop[k]) out.push_back(x.dim(k));
    }
    ctx.set_output(0, x.reshaped(std::move(out)));
  }

 private:
  bool from_attribute_;
  bool has_axes_ = false;
  std::vector<std::int64_t> axes_;
};

class unsqueeze_kernel final : public kernel {
 public:
  explicit unsqueeze_kernel(const kernel_build_info& info) : from_attribute_(info.opset < 13) {
    if (from_attribute_) {
      if (!info.node.find_attribute("axes")) info.fail("attribute 'axes' is required before opset 13");
      axes_ = info.node.attr_ints("axes", {});
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::vector<std::int64_t> axes = from_attribute_ ? axes_ : int_values(ctx, 1, "axes");
    const std::size_t rank = x.rank() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (std::size_t k : normalize_axes(ctx, axes, rank)) inserted[k] = true;
    shape_t out(rank, 1);
    std::size_t next = 0;
    for (std::size_t k = 0; k < rank; ++k) {
      if (!inserted[k]) out[k] = x.dim(next++);
    }
    ctx.set_output(0, x.reshaped(std::move(out)));
  }

 private:
  bool from_attribute_;
  std::vector<std::int64_t> axes_;
};

class shape_kernel final : public kernel {
 public:
  explicit shape_kernel(const kernel_build_info& info)
      : start_(info.node.attr_int("start", 0)), end_(info.node.find_attribute("end") ? info.node.attr_int("end", 0) : INT64_MAX) {}
  void compute(kernel_context& ctx) override {
    const shape_t& in = ctx.input(0).shape();
    const auto rank = static_cast<std::int64_t>(in.size());
    auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
    const std::int64_t begin = clamp(start_);
    const std::int64_t end = std::max(begin, clamp(end_));
    tensor& out = ctx.allocate_output(0, data_type::int64, {end - begin});
    std::copy(in.begin() + begin, in.begin() + end, out.mutable_data<std::int64_t>());
  }

 private:
  std::int64_t start_;
  std::int64_t end_;
};

class size_kernel final : public kernel {
 public:
  explicit size_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const std::int64_t n = ctx.input(0).element_count();
    *ctx.allocate_output(0, data_type::int64, {}).mutable_data<std::int64_t>() = n;
  }
};

}  // namespace

void register_view_kernels(kernel_registry& r) {
  r.add("", "Reshape", factory<reshape_kernel>());
  r.add("", "Flatten", factory<flatten_kernel>());
  r.add("", "Squeeze", factory<squeeze_kernel>());
  r.add("", "Unsqueeze", factory<unsqueeze_kernel>());
  r.add("", "Shape", factory<shape_kernel>());
  r.add("", "Size", factory<size_kernel>());
}

}  // namespace shape_detail

void register_shape_kernels(kernel_registry& r) {
  shape_detail::register_view_kernels(r);
  shape_detail::register_transpose_kernels(r);
  shape_detail::register_concat_split_kernels(r);
  shape_detail::register_slice_kernels(r);
  shape_detail::register_gather_kernels(r);
  shape_detail::register_constant_kernels(r);
  shape_detail::register_pad_kernels(r);
  shape_detail::register_resize_kernels(r);
}

}  // namespace inferopt::runtime
