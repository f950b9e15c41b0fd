// The nn kernel family: convolutions, matrix products, pools, normalizations and softmax.
// Each nn_*.cpp file registers its own ops; this file only strings them together and holds
// the window-attribute helpers they share.

#include <algorithm>

#include "inferopt/ir/shape_rules.hpp"
#include "nn_common.hpp"

namespace inferopt::runtime {

namespace nn {

namespace {

bool all_positive(const dims& d) {
  return std::all_of(d.begin(), d.end(), [](std::int64_t v) { return v > 0; });
}

}  // namespace

std::string dims_text(const dims& d) { return to_string(d); }

window_attrs parse_window_attrs(const kernel_build_info& info, bool with_ceil, bool with_dilations) {
  const ir::node& n = info.node;
  window_attrs a;
  a.kernel_shape = n.attr_ints("kernel_shape", {});
  a.strides = n.attr_ints("strides", {});
  a.dilations = with_dilations ? n.attr_ints("dilations", {}) : dims{};
  a.pads = n.attr_ints("pads", {});
  a.ceil_mode = with_ceil && n.attr_int("ceil_mode", 0) != 0;
  const std::string mode = n.attr_string("auto_pad", "NOTSET");
  if (mode == "NOTSET" || mode.empty()) a.pad_mode = auto_pad::notset;
  else if (mode == "SAME_UPPER") a.pad_mode = auto_pad::same_upper;
  else if (mode == "SAME_LOWER") a.pad_mode = auto_pad::same_lower;
  else if (mode == "VALID") a.pad_mode = auto_pad::valid;
  else info.fail("auto_pad '" + mode + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");

  if (!all_positive(a.kernel_shape)) info.fail("kernel_shape " + dims_text(a.kernel_shape) + " must be positive");
  if (!all_positive(a.strides)) info.fail("strides " + dims_text(a.strides) + " must be positive");
  if (!all_positive(a.dilations)) info.fail("dilations " + dims_text(a.dilations) + " must be positive");
  if (std::any_of(a.pads.begin(), a.pads.end(), [](std::int64_t v) { return v < 0; })) {
    info.fail("pads " + dims_text(a.pads) + " must not be negative");
  }
  if (a.pads.size() % 2 != 0) info.fail("pads " + dims_text(a.pads) + " must hold a begin and an end per axis");
  const std::size_t rank = !a.kernel_shape.empty() ? a.kernel_shape.size() : 0;
  if (rank) {
    auto check = [&](const dims& d, std::size_t want, const char* name) {
      if (!d.empty() && d.size() != want) {
        info.fail(std::string(name) + " " + dims_text(d) + " does not match kernel_shape " + dims_text(a.kernel_shape));
      }
    };
    check(a.strides, rank, "strides");
    check(a.dilations, rank, "dilations");
    check(a.pads, 2 * rank, "pads");
  }
  return a;
}

window_geometry resolve_window(const kernel_context& ctx, const window_attrs& a, const dims& in, const dims& kernel) {
  const std::size_t rank = in.size();
  auto pick = [&](const dims& d, std::size_t want, const char* name) {
    if (d.empty()) return dims(want, 1);
    if (d.size() != want) {
      ctx.fail(std::string(name) + " " + dims_text(d) + " does not match " + std::to_string(rank) + " spatial dims");
    }
    return d;
  };
  window_geometry g;
  g.in = in;
  g.kernel = kernel;
  if (kernel.size() != rank) ctx.fail("kernel " + dims_text(kernel) + " does not match " + std::to_string(rank) + " spatial dims");
  g.stride = pick(a.strides, rank, "strides");
  g.dilation = pick(a.dilations, rank, "dilations");
  const dims pads = a.pads.empty() ? dims(2 * rank, 0) : pick(a.pads, 2 * rank, "pads");
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  g.out.resize(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    try {
      if (a.pad_mode == auto_pad::same_upper || a.pad_mode == auto_pad::same_lower) {
        // The output size is the shared rule's; the padding that gives it is the executor's.
        g.out[d] = ir::shape_rules::same_padded_dim<std::int64_t>(in[d], g.stride[d]);
        const std::int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
        const std::int64_t total = std::max<std::int64_t>(0, (g.out[d] - 1) * g.stride[d] + span - in[d]);
        const std::int64_t small = total / 2;
        g.pad_begin[d] = a.pad_mode == auto_pad::same_upper ? small : total - small;
        g.pad_end[d] = total - g.pad_begin[d];
      } else {
        if (a.pad_mode == auto_pad::valid) g.pad_begin[d] = g.pad_end[d] = 0;
        g.out[d] = ir::shape_rules::window_output_dim<std::int64_t>(in[d], g.kernel[d], g.stride[d], g.dilation[d],
                                                                    g.pad_begin[d], g.pad_end[d], a.ceil_mode);
      }
    } catch (const error& e) {
      ctx.fail(std::string(e.what()) + " (spatial dims " + dims_text(in) + ")");
    }
    if (g.out[d] <= 0) {
      ctx.fail("window " + dims_text(g.kernel) + " with dilations " + dims_text(g.dilation) +
               " does not fit the input's spatial dims " + dims_text(in));
    }
  }
  return g;
}

}  // namespace nn

void register_nn_kernels(kernel_registry& r) {
  nn::register_conv_kernels(r);
  nn::register_matmul_kernels(r);
  nn::register_matmul_integer_kernels(r);
  nn::register_pool_kernels(r);
  nn::register_norm_kernels(r);
  nn::register_skip_norm_kernels(r);
  nn::register_softmax_kernels(r);
  nn::register_attention_kernels(r);
  nn::register_onnx_attention_kernels(r);
  nn::register_matmul_gelu_kernels(r);
}

}  // namespace inferopt::runtime
