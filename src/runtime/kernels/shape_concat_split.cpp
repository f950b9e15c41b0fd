// Concat and Split: both see their tensors as [outer, axis * inner] rows and move whole
// contiguous blocks, so they work on any element type by width.

#include <numeric>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

class concat_kernel final : public kernel {
 public:
  explicit concat_kernel(const kernel_build_info& info) : axis_(info.node.attr_int("axis", 1)) {
    if (info.opset >= 4 && !info.node.find_attribute("axis")) info.fail("attribute 'axis' is required");
  }
  void compute(kernel_context& ctx) override {
    if (ctx.input_count() == 0) ctx.fail("needs at least one input");
    const tensor& first = ctx.input(0);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, first.rank());
    std::vector<shape_t> parts;
    for (std::size_t i = 0; i < ctx.input_count(); ++i) {
      const tensor& t = ctx.input(i);
      if (t.dtype() != first.dtype()) {
        ctx.fail("input " + std::to_string(i) + " is " + std::string(ir::to_string(t.dtype())) + ", input 0 is " +
                 std::string(ir::to_string(first.dtype())));
      }
      parts.push_back(t.shape());
    }
    const shape_t out_shape = detail::apply_shape_rule(ctx, [&] { return ir::shape_rules::concat_shape<std::int64_t>(parts, static_cast<std::int64_t>(axis)); });
    if (ctx.input_count() == 1) {
      ctx.set_output(0, first.reshaped(out_shape));
      return;
    }
    const std::size_t width = element_width(ctx, first.dtype());
    tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
    const std::int64_t outer = detail::product(out_shape, 0, axis);
    const std::int64_t inner = detail::product(out_shape, axis + 1) * static_cast<std::int64_t>(width);
    const std::int64_t out_row = out_shape[axis] * inner;
    std::byte* dst = mutable_bytes_of(out);
    std::int64_t column = 0;
    for (std::size_t i = 0; i < ctx.input_count(); ++i) {
      const tensor& t = ctx.input(i);
      const std::int64_t row = t.dim(axis) * inner;
      const std::byte* src = bytes_of(t);
      if (row > 0) {
        detail::parallel_for(ctx.threads(), outer, std::max<std::int64_t>(1, 65536 / row), [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t o = b; o < e; ++o) {
            std::memcpy(dst + o * out_row + column, src + o * row, static_cast<std::size_t>(row));
          }
        });
      }
      column += row;
    }
  }

 private:
  std::int64_t axis_;
};

class split_kernel final : public kernel {
 public:
  explicit split_kernel(const kernel_build_info& info)
      : axis_(info.node.attr_int("axis", 0)), split_from_input_(info.opset >= 13) {
    if (!split_from_input_ && info.node.find_attribute("split")) {
      split_ = info.node.attr_ints("split", {});
      has_split_ = true;
    }
    if (info.opset >= 18 && info.node.find_attribute("num_outputs")) {
      num_outputs_ = info.node.attr_int("num_outputs", 0);
      if (num_outputs_ <= 0) info.fail("num_outputs must be positive, got " + std::to_string(num_outputs_));
      if (num_outputs_ != static_cast<std::int64_t>(info.node.outputs().size())) {
        info.fail("num_outputs is " + std::to_string(num_outputs_) + " but the node has " +
                  std::to_string(info.node.outputs().size()) + " outputs");
      }
    }
    uneven_ = info.opset >= 18;
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, x.rank());
    const std::int64_t dim = x.dim(axis);
    const auto parts = static_cast<std::int64_t>(ctx.output_count());
    std::vector<std::int64_t> sizes = split_;
    bool has_split = has_split_;
    if (split_from_input_ && ctx.has_input(1)) {
      sizes = int_values(ctx, 1, "split");
      has_split = true;
    }
    if (has_split && num_outputs_ > 0) ctx.fail("has both a split input and num_outputs");
    if (has_split) {
      if (static_cast<std::int64_t>(sizes.size()) != parts) {
        ctx.fail("split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(parts) + " outputs");
      }
      std::int64_t total = 0;
      for (std::int64_t s : sizes) {
        if (s < 0 || __builtin_add_overflow(total, s, &total)) ctx.fail("split " + to_string(sizes) + " has an invalid size");
      }
      if (total != dim) {
        ctx.fail("split " + to_string(sizes) + " does not add up to dim " + std::to_string(dim) + " of shape " +
                 to_string(x.shape()));
      }
    } else {
      if (parts <= 0) ctx.fail("has no outputs");
      if (dim % parts == 0) {
        sizes.assign(static_cast<std::size_t>(parts), dim / parts);
      } else if (uneven_) {
        // Opset 18: chunks of ceil(dim / parts), the last one smaller.
        const std::int64_t chunk = dim / parts + 1;
        sizes.assign(static_cast<std::size_t>(parts), chunk);
        sizes.back() = dim - chunk * (parts - 1);
        if (sizes.back() < 0) {
          ctx.fail("dim " + std::to_string(dim) + " cannot be split into " + std::to_string(parts) + " chunks");
        }
      } else {
        ctx.fail("dim " + std::to_string(dim) + " of shape " + to_string(x.shape()) + " does not split evenly into " +
                 std::to_string(parts) + " outputs");
      }
    }
    const std::size_t width = element_width(ctx, x.dtype());
    const std::int64_t outer = detail::product(x.shape(), 0, axis);
    const std::int64_t inner = detail::product(x.shape(), axis + 1) * static_cast<std::int64_t>(width);
    const std::int64_t in_row = dim * inner;
    const std::byte* src = bytes_of(x);
    std::int64_t column = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t row = sizes[i] * inner;
      if (ctx.wants_output(i)) {
        shape_t shape = x.shape();
        shape[axis] = sizes[i];
        tensor& out = ctx.allocate_output(i, x.dtype(), shape);
        std::byte* dst = mutable_bytes_of(out);
        for (std::int64_t o = 0; o < outer && row > 0; ++o) {
          std::memcpy(dst + o * row, src + o * in_row + column, static_cast<std::size_t>(row));
        }
      }
      column += row;
    }
  }

 private:
  std::int64_t axis_;
  bool split_from_input_;
  bool has_split_ = false;
  bool uneven_ = false;
  std::int64_t num_outputs_ = 0;
  std::vector<std::int64_t> split_;
};

}  // namespace

void register_concat_split_kernels(kernel_registry& r) {
  r.add("", "Concat", factory<concat_kernel>());
  r.add("", "Split", factory<split_kernel>(), 2);
}

}  // namespace inferopt::runtime::shape_detail
