#pragma once
// Pieces shared by the nn kernel files (private to src/runtime/kernels): the sliding-window
// attributes of Conv, ConvTranspose and the pools, parsed and validated once at build time and
// resolved against the input shape at run time, plus thread-local scratch buffers.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/runtime/kernel.hpp"
#include "kernel_util.hpp"
#include "nn_epilogue.hpp"

namespace inferopt::runtime::nn {

using dims = std::vector<std::int64_t>;

/// The domain of ops the session fuses into its own copy of a graph (linear_gelu.hpp); a
/// model that uses it is refused.
inline constexpr const char* executor_fused_domain = "inferopt.cpu";

enum class auto_pad { notset, same_upper, same_lower, valid };

/// Window attributes as written on the node. Empty vectors mean "not given" (their defaults
/// depend on the spatial rank, known only once the input arrives).
struct window_attrs {
  dims kernel_shape;
  dims strides;
  dims dilations;
  dims pads;  // [begin..., end...]
  auto_pad pad_mode = auto_pad::notset;
  bool ceil_mode = false;
};

/// Reads kernel_shape, strides, dilations, pads, auto_pad (and ceil_mode when `with_ceil`).
/// @throws via info.fail for non-positive strides, dilations or kernel dims, negative pads,
///         an odd pads count, mismatched lengths or an unknown auto_pad.
window_attrs parse_window_attrs(const kernel_build_info& info, bool with_ceil, bool with_dilations = true);

/// A window resolved against one input: per spatial dim.
struct window_geometry {
  dims in, kernel, stride, dilation, pad_begin, pad_end, out;
  [[nodiscard]] std::size_t rank() const noexcept { return in.size(); }
  [[nodiscard]] std::int64_t in_size() const { return detail::product(in); }
  [[nodiscard]] std::int64_t out_size() const { return detail::product(out); }
  [[nodiscard]] std::int64_t kernel_size() const { return detail::product(kernel); }
};

/// Resolves the attributes for the spatial dims `in` and window `kernel` (Conv takes the
/// kernel from its weights; pools from kernel_shape). Output size per dim:
/// floor (or ceil with ceil_mode) of (in + pads - dilation*(k-1) - 1) / stride + 1, with a
/// ceil-mode window that would start past the input and its begin padding dropped (as
/// PyTorch and onnxruntime do); SAME_* gives ceil(in / stride) and VALID
/// floor((in - dilation*(k-1) - 1) / stride) + 1.
/// @throws via ctx.fail when attribute lengths disagree with the input rank or an output dim
///         would be empty.
window_geometry resolve_window(const kernel_context& ctx, const window_attrs& a, const dims& in, const dims& kernel);

/// "[2,3]"-style text for messages.
std::string dims_text(const dims& d);

/// A per-thread, grow-only buffer of at least `count` elements; `slot` separates buffers a
/// kernel needs at the same time. Valid until the same thread asks for the same slot again.
template <class T>
T* scratch(std::size_t count, int slot = 0) {
  thread_local std::vector<T> buffers[2];
  std::vector<T>& b = buffers[slot & 1];
  if (b.size() < count) {
    b.clear();
    b.shrink_to_fit();
    b.resize(count);
  }
  return b.data();
}

/// Refuses inputs that are neither float nor double (as unsupported, not invalid).
inline void require_floating(const kernel_context& ctx) {
  const data_type t = ctx.input(0).dtype();
  if (t != data_type::float32 && t != data_type::float64) {
    ctx.unsupported("element type " + std::string(ir::to_string(t)) + " is not supported (float and double are)");
  }
}

/// Calls fn(float{}) or fn(double{}) by input 0's element type; other types are unsupported.
template <class Fn>
void dispatch_floating(kernel_context& ctx, Fn&& fn) {
  require_floating(ctx);
  if (ctx.input(0).dtype() == data_type::float32) return fn(float{});
  return fn(double{});
}

/// rows x cols block of c (leading dim ldc): c += the epilogue's residual (when it has one),
/// then its activation; for the paths that do not run on the packed GEMM.
template <class T>
void apply_epilogue(const epilogue<T>& e, T* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols) noexcept {
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = c + r * ldc;
    if (e.residual) {
      const T* z = e.residual + r * e.ldr;
      for (std::int64_t i = 0; i < cols; ++i) row[i] += z[i];
    }
    activate(e.act, row, cols);
  }
}

/// FusedConv's `activation` and `activation_params` (identity when there is no activation).
/// @throws via info.fail for an activation ORT rejects or a wrong parameter count.
activation_spec fused_conv_activation(const kernel_build_info& info);
/// FusedGemm's `activation` and `activation_alpha`/`activation_beta`.
/// @throws via info.fail for an activation ORT rejects or a missing parameter.
activation_spec fused_gemm_activation(const kernel_build_info& info);

// One registration function per nn file (nn.cpp calls them from register_nn_kernels).
void register_conv_kernels(kernel_registry& r);
void register_matmul_kernels(kernel_registry& r);
void register_matmul_integer_kernels(kernel_registry& r);
void register_pool_kernels(kernel_registry& r);
void register_norm_kernels(kernel_registry& r);
void register_skip_norm_kernels(kernel_registry& r);
void register_softmax_kernels(kernel_registry& r);
void register_attention_kernels(kernel_registry& r);
void register_onnx_attention_kernels(kernel_registry& r);
void register_matmul_gelu_kernels(kernel_registry& r);

}  // namespace inferopt::runtime::nn
