// Pad: constant, reflect, edge and wrap modes, with the pads as an attribute (before opset 11)
// or an input (axes input from opset 18). Negative pads crop. Every output index along every
// dim maps to an input index (or to "constant"); rows are then copied with the in-range
// middle as one memcpy, so the cost is one pass over the output for any mode.

#include <algorithm>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

enum class pad_mode { constant, reflect, edge, wrap };

constexpr std::int64_t outside = -1;

/// For each output index along a dim of size n padded by (begin, end): the input index, or
/// `outside` for constant padding.
std::vector<std::int64_t> index_map(pad_mode mode, std::int64_t n, std::int64_t begin, std::int64_t out) {
  std::vector<std::int64_t> map(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    std::int64_t i = o - begin;
    if (i < 0 || i >= n) {
      switch (mode) {
        case pad_mode::constant: i = outside; break;
        case pad_mode::edge: i = std::clamp<std::int64_t>(i, 0, n - 1); break;
        case pad_mode::wrap: i = ((i % n) + n) % n; break;
        case pad_mode::reflect: {
          // numpy's reflect: period 2(n-1), the edge element not repeated.
          if (n == 1) {
            i = 0;
            break;
          }
          const std::int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n) i = period - i;
          break;
        }
      }
    }
    map[static_cast<std::size_t>(o)] = i;
  }
  return map;
}

void copy_padded(const kernel_context& ctx, const tensor& x, tensor& out, const std::vector<std::vector<std::int64_t>>& maps,
                 std::int64_t inner_begin, std::size_t width, const element_value& constant) {
  const std::size_t rank = x.rank();
  const shape_t& out_shape = out.shape();
  const std::vector<std::int64_t> in_strides = detail::strides_of(x.shape());
  const std::int64_t cols = out_shape[rank - 1];
  const std::int64_t n = x.dim(rank - 1);
  const std::int64_t rows = out.element_count() / cols;
  // Output columns [lo, hi) read input columns lo - begin ... contiguously.
  const std::int64_t lo = std::clamp<std::int64_t>(inner_begin, 0, cols);
  const std::int64_t hi = std::clamp<std::int64_t>(n + inner_begin, lo, cols);
  const std::vector<std::int64_t>& inner_map = maps[rank - 1];
  const std::byte* src = bytes_of(x);
  std::byte* dst = mutable_bytes_of(out);
  const auto w = static_cast<std::int64_t>(width);
  detail::parallel_for(ctx.threads(), rows, std::max<std::int64_t>(1, 16384 / cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t row = b; row < e; ++row) {
      std::byte* o = dst + row * cols * w;
      std::int64_t rest = row;
      std::int64_t offset = 0;
      bool inside = true;
      for (std::size_t k = rank - 1; k-- > 0;) {
        const std::int64_t i = maps[k][static_cast<std::size_t>(rest % out_shape[k])];
        rest /= out_shape[k];
        if (i == outside) inside = false;
        offset += i * in_strides[k];
      }
      if (!inside) {
        fill(o, width, constant, cols);
        continue;
      }
      const std::byte* in = src + offset * w;
      auto edge = [&](std::int64_t from, std::int64_t to) {
        for (std::int64_t j = from; j < to; ++j) {
          const std::int64_t i = inner_map[static_cast<std::size_t>(j)];
          if (i == outside) {
            std::memcpy(o + j * w, constant.bytes.data(), width);
          } else {
            std::memcpy(o + j * w, in + i * w, width);
          }
        }
      };
      edge(0, lo);
      if (hi > lo) std::memcpy(o + lo * w, in + (lo - inner_begin) * w, static_cast<std::size_t>((hi - lo) * w));
      edge(hi, cols);
    }
  });
}

/// Writes `x` padded by begin/end per dim (negative: cropped) into output 0.
void pad_tensor(kernel_context& ctx, const tensor& x, const std::vector<std::int64_t>& begin,
                const std::vector<std::int64_t>& end, pad_mode mode, const element_value& constant) {
  const std::size_t rank = x.rank();
  shape_t out_shape(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    std::int64_t size = 0;
    // A crop larger than the dim leaves nothing to pad around; it is refused so that the
    // index arithmetic below stays within the dims.
    if (begin[k] < -x.dim(k) || end[k] < -x.dim(k) || __builtin_add_overflow(x.dim(k), begin[k], &size) || __builtin_add_overflow(size, end[k], &size) || size < 0) {
      ctx.fail("padding dim " + std::to_string(k) + " of shape " + to_string(x.shape()) + " by (" +
               std::to_string(begin[k]) + ", " + std::to_string(end[k]) + ") gives an invalid size");
    }
    out_shape[k] = size;
    if (mode != pad_mode::constant && x.dim(k) == 0 && size > 0) {
      ctx.fail("cannot pad the empty dim " + std::to_string(k) + " in a non-constant mode");
    }
  }
  const std::size_t width = element_width(ctx, x.dtype());
  tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  if (out.element_count() == 0) return;
  if (rank == 0) {
    std::memcpy(out.mutable_raw(), x.raw(), width);
    return;
  }
  std::vector<std::vector<std::int64_t>> maps(rank);
  for (std::size_t k = 0; k < rank; ++k) maps[k] = index_map(mode, x.dim(k), begin[k], out_shape[k]);
  copy_padded(ctx, x, out, maps, begin[rank - 1], width, constant);
}

class pad_kernel final : public kernel {
 public:
  explicit pad_kernel(const kernel_build_info& info) : from_attributes_(info.opset < 11), has_axes_input_(info.opset >= 18) {
    const std::string mode = info.node.attr_string("mode", "constant");
    if (mode == "constant") mode_ = pad_mode::constant;
    else if (mode == "reflect") mode_ = pad_mode::reflect;
    else if (mode == "edge") mode_ = pad_mode::edge;
    else if (mode == "wrap" && info.opset >= 19) mode_ = pad_mode::wrap;
    else info.fail("mode '" + mode + "' is not valid at opset " + std::to_string(info.opset));
    if (from_attributes_) {
      const char* name = info.opset < 2 ? "paddings" : "pads";
      if (!info.node.find_attribute(name)) info.fail(std::string("attribute '") + name + "' is required");
      pads_ = info.node.attr_ints(name, {});
      value_ = info.node.attr_float("value", 0.0f);
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t rank = x.rank();
    std::vector<std::int64_t> pads = pads_;
    std::vector<std::size_t> axes(rank);
    for (std::size_t k = 0; k < rank; ++k) axes[k] = k;
    element_value constant = make_element(x.dtype(), value_);
    if (!from_attributes_) {
      pads = int_values(ctx, 1, "pads");
      if (ctx.has_input(2) && ctx.input(2).element_count() > 0) {
        if (ctx.input(2).dtype() != x.dtype()) ctx.fail("constant_value and data differ in type");
        constant = element_of(ctx.input(2), 0);
      }
      if (has_axes_input_ && ctx.has_input(3)) axes = normalize_axes(ctx, int_values(ctx, 3, "axes"), rank);
    }
    if (pads.size() != 2 * axes.size()) {
      ctx.fail("pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    }
    std::vector<std::int64_t> begin(rank, 0), end(rank, 0);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      begin[axes[k]] = pads[k];
      end[axes[k]] = pads[k + axes.size()];
    }
    pad_tensor(ctx, x, begin, end, mode_, constant);
  }

 private:
  bool from_attributes_;
  bool has_axes_input_;
  pad_mode mode_ = pad_mode::constant;
  std::vector<std::int64_t> pads_;
  float value_ = 0.0f;
};

// CenterCropPad: crops or zero-pads each listed axis around its centre (the extra element of
// an odd difference goes to the end).
class center_crop_pad_kernel final : public kernel {
 public:
  explicit center_crop_pad_kernel(const kernel_build_info& info) {
    if (info.node.find_attribute("axes")) {
      axes_ = info.node.attr_ints("axes", {});
      has_axes_ = true;
    }
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t rank = x.rank();
    std::vector<std::size_t> axes(rank);
    for (std::size_t k = 0; k < rank; ++k) axes[k] = k;
    if (has_axes_) axes = normalize_axes(ctx, axes_, rank);
    const std::vector<std::int64_t> shape = int_values(ctx, 1, "shape");
    if (shape.size() != axes.size()) {
      ctx.fail("shape has " + std::to_string(shape.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    }
    std::vector<std::int64_t> begin(rank, 0), end(rank, 0);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      if (shape[k] < 0) ctx.fail("shape " + to_string(shape) + " has a negative dim");
      const std::int64_t diff = shape[k] - x.dim(axes[k]);  // > 0 pads, < 0 crops
      const std::int64_t half = (diff < 0 ? -diff : diff) / 2;
      const std::int64_t rest = (diff < 0 ? -diff : diff) - half;
      begin[axes[k]] = diff < 0 ? -half : half;
      end[axes[k]] = diff < 0 ? -rest : rest;
    }
    pad_tensor(ctx, x, begin, end, pad_mode::constant, element_value{});
  }

 private:
  bool has_axes_ = false;
  std::vector<std::int64_t> axes_;
};

}  // namespace

void register_pad_kernels(kernel_registry& r) {
  r.add("", "Pad", factory<pad_kernel>());
  r.add("", "CenterCropPad", factory<center_crop_pad_kernel>(), 18);
}

}  // namespace inferopt::runtime::shape_detail
