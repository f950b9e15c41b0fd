// Slice, Expand and Tile: each output is a strided view of the input (steps, zero strides for
// broadcast dims, a zero-stride repeat dim per tiled axis) copied out by `strided_copy`.
// Shapes read from data (targets, repeats) are checked before anything is allocated.

#include <algorithm>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

class slice_kernel final : public kernel {
 public:
  explicit slice_kernel(const kernel_build_info& info) : from_attributes_(info.opset < 10) {
    if (from_attributes_) {
      if (!info.node.find_attribute("starts") || !info.node.find_attribute("ends")) {
        info.fail("attributes 'starts' and 'ends' are required before opset 10");
      }
      starts_ = info.node.attr_ints("starts", {});
      ends_ = info.node.attr_ints("ends", {});
      if (info.node.find_attribute("axes")) {
        axes_ = info.node.attr_ints("axes", {});
        has_axes_ = true;
      }
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    std::vector<std::int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    bool has_axes = has_axes_;
    if (!from_attributes_) {
      starts = int_values(ctx, 1, "starts");
      ends = int_values(ctx, 2, "ends");
      if (ctx.has_input(3)) {
        axes = int_values(ctx, 3, "axes");
        has_axes = true;
      }
      if (ctx.has_input(4)) steps = int_values(ctx, 4, "steps");
    }
    if (ends.size() != starts.size()) ctx.fail("starts and ends have different lengths");
    if (!has_axes) {
      axes.resize(starts.size());
      for (std::size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<std::int64_t>(k);
    }
    if (axes.size() != starts.size()) ctx.fail("axes and starts have different lengths");
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (steps.size() != starts.size()) ctx.fail("steps and starts have different lengths");

    const std::vector<std::size_t> resolved = normalize_axes(ctx, axes, x.rank());
    const std::vector<std::int64_t> in_strides = detail::strides_of(x.shape());
    shape_t out_shape = x.shape();
    std::vector<std::int64_t> strides = in_strides;
    std::int64_t base = 0;
    for (std::size_t k = 0; k < resolved.size(); ++k) {
      if (steps[k] == 0) ctx.fail("step for axis " + std::to_string(axes[k]) + " is 0");
      const std::size_t a = resolved[k];
      const ir::shape_rules::axis_slice s = ir::shape_rules::clamp_slice(starts[k], ends[k], steps[k], x.dim(a));
      out_shape[a] = s.count;
      strides[a] = s.step * in_strides[a];
      if (s.count > 0) base += s.start * in_strides[a];
    }
    if (out_shape == x.shape() && base == 0 && strides == in_strides) {
      ctx.set_output(0, x);
      return;
    }
    const std::size_t width = element_width(ctx, x.dtype());
    tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    if (out.element_count() == 0) return;
    strided_copy(bytes_of(x) + base * static_cast<std::int64_t>(width), mutable_bytes_of(out), width, out_shape, strides,
                 ctx.threads());
  }

 private:
  bool from_attributes_;
  bool has_axes_ = false;
  std::vector<std::int64_t> starts_, ends_, axes_;
};

class expand_kernel final : public kernel {
 public:
  explicit expand_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (ctx.input(1).rank() != 1) ctx.fail("shape must be 1-D, got shape " + to_string(ctx.input(1).shape()));
    const shape_t target = int_values(ctx, 1, "shape");
    for (std::int64_t d : target) {
      if (d < 0) ctx.fail("target shape " + to_string(target) + " has a negative dim");
    }
    const shape_t out_shape = detail::broadcast_shapes(ctx, {&x.shape(), &target});
    if (out_shape == x.shape()) {
      ctx.set_output(0, x);
      return;
    }
    const std::size_t width = element_width(ctx, x.dtype());
    tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    strided_copy(bytes_of(x), mutable_bytes_of(out), width, out_shape, detail::broadcast_strides(x.shape(), out_shape),
                 ctx.threads());
  }
};

class tile_kernel final : public kernel {
 public:
  explicit tile_kernel(const kernel_build_info&) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::vector<std::int64_t> repeats = int_values(ctx, 1, "repeats");
    if (repeats.size() != x.rank()) {
      ctx.fail("repeats has " + std::to_string(repeats.size()) + " entries for input shape " + to_string(x.shape()));
    }
    // Output [r0*d0, r1*d1, ...] read row-major is [r0, d0, r1, d1, ...] with the repeat dims
    // at stride 0.
    const std::vector<std::int64_t> in_strides = detail::strides_of(x.shape());
    shape_t out_shape(x.rank()), view_shape;
    std::vector<std::int64_t> strides;
    for (std::size_t k = 0; k < x.rank(); ++k) {
      if (repeats[k] < 0) ctx.fail("repeats " + to_string(repeats) + " has a negative entry");
      if (__builtin_mul_overflow(repeats[k], x.dim(k), &out_shape[k])) ctx.fail("repeats " + to_string(repeats) + " overflow");
      view_shape.insert(view_shape.end(), {repeats[k], x.dim(k)});
      strides.insert(strides.end(), {0, in_strides[k]});
    }
    if (out_shape == x.shape()) {
      ctx.set_output(0, x);
      return;
    }
    const std::size_t width = element_width(ctx, x.dtype());
    tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    if (out.element_count() == 0) return;
    strided_copy(bytes_of(x), mutable_bytes_of(out), width, view_shape, strides, ctx.threads());
  }
};

}  // namespace

void register_slice_kernels(kernel_registry& r) {
  r.add("", "Slice", factory<slice_kernel>());
  r.add("", "Expand", factory<expand_kernel>(), 8);
  r.add("", "Tile", factory<tile_kernel>(), 6);
}

}  // namespace inferopt::runtime::shape_detail
