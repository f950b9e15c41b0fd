// Shape kernels that never move data: Reshape, Flatten, Squeeze and Unsqueeze return the input's
// storage under a new shape (zero copy), Shape and Size read only the shape. This file also
// fills the registry for the whole shape family.

#include <algorithm>

#include "shape_common.hpp"

namespace inferopt::runtime {

namespace shape_detail {
namespace {

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
    ctx.set_output(0, x.reshaped(detail::apply_shape_rule(
                          ctx, [&] { return ir::shape_rules::reshape_shape<std::int64_t>(x.shape(), target, allow_zero_); })));
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
    ctx.set_output(0, x.reshaped(detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::flatten_shape<std::int64_t>(x.shape(), axis_); })));
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
    if (has_axes && axes.empty()) {
      ctx.set_output(0, x.reshaped(x.shape()));  // an empty axes input squeezes nothing
      return;
    }
    (void)normalize_axes(ctx, axes, x.rank());  // refuses repeated axes
    ctx.set_output(0, x.reshaped(detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::squeeze_shape<std::int64_t>(x.shape(), axes); })));
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
    ctx.set_output(0, x.reshaped(detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::unsqueeze_shape<std::int64_t>(x.shape(), axes); })));
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
