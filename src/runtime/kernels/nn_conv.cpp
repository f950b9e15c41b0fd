// Conv, com.microsoft FusedConv and ConvTranspose (float32 and float64), N-d with groups,
// strides, dilations, pads and auto_pad.
//
// Strategy, per image n and group g:
//   - depthwise (one input channel per group, 1 or 2 spatial dims): a direct loop over the
//     window that the compiler vectorizes along the output row; no GEMM.
//   - float32 3x3 stride-1 maps of at least 196 outputs, one group, constant weights:
//     Winograd F(2x2, 3x3) (nn_winograd.hpp), 16 GEMMs on nn::gemm_packed.
//   - float32 otherwise: Y_g = bias_g + W_g * X_g through nn::gemm_packed. The weights are
//     packed into the panels of Eigen's GEBP kernel once, when the session is built, if they
//     are a constant initializer (each run checks that the input still is that constant: a
//     graph input may override its initializer), else once per run. The right operand is X_g
//     itself for 1x1 windows with stride 1 and no padding, and otherwise im2col columns that
//     the GEMM gathers one cache block at a time (the column matrix never exists in full).
//     The bias is written into each output tile right before its product accumulates onto it.
//   - float64 otherwise: im2col into a scratch buffer, bias rows, then nn::gemm (Eigen).
// Small per-group products (grouped convs, batches) run in parallel over (n, g) with one
// thread each; large ones run one at a time with the GEMM parallel inside.
// FusedConv is Conv plus an epilogue (nn_epilogue.hpp): Y = act(conv + bias + Z). Every
// path applies it per output block while the block is hot: the packed GEMM per tile, Winograd
// per output row, the depthwise loop per output plane, the float64 path per (image, group)
// product. Plain Conv passes no epilogue.
// ConvTranspose is the adjoint: col[M/g * k, in] = W_g^T * X_g, then col2im adds col into Y_g.
// Error bound: that of nn::gemm with k = C/g * prod(kernel) (float32 dot products).

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>

#include "inferopt/ir/value.hpp"
#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "nn_gemm.hpp"
#include "nn_winograd.hpp"

namespace inferopt::runtime::nn {

namespace {

// Work below which a product runs on one thread (and independent products run side by side).
constexpr std::int64_t small_gemm_flops = std::int64_t{1} << 22;
// Spatial ranks the packed (float) path handles; higher ones take the im2col + gemm path.
constexpr std::size_t max_packed_rank = 8;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// Output positions o in [0, count) whose input position o*stride + offset lies in [0, limit).
struct valid_range {
  std::int64_t lo, hi;
};
valid_range range_of(std::int64_t offset, std::int64_t stride, std::int64_t limit, std::int64_t count) {
  std::int64_t lo = offset >= 0 ? 0 : ceil_div(-offset, stride);
  std::int64_t hi = limit - offset <= 0 ? 0 : ceil_div(limit - offset, stride);
  lo = std::min(lo, count);
  hi = std::clamp(hi, lo, count);
  return {lo, hi};
}

/// Splits row r of the column matrix into its channel and its kernel offsets.
void kernel_offsets(std::int64_t r, const window_geometry& g, std::int64_t& channel, std::int64_t* k) {
  const std::int64_t ks = g.kernel_size();
  channel = r / ks;
  std::int64_t rem = r % ks;
  for (std::size_t d = g.rank(); d-- > 0;) {
    k[d] = rem % g.kernel[d];
    rem /= g.kernel[d];
  }
}

/// Input offset of output row `o` (all spatial dims but the last) for kernel offsets `k`,
/// or -1 when that row lies in the padding.
inline std::int64_t row_base(std::int64_t o, const window_geometry& g, const std::int64_t* k) {
  std::int64_t base = 0;
  std::int64_t stride = g.in.back();
  for (std::size_t d = g.rank() - 1; d-- > 0;) {
    const std::int64_t od = o % g.out[d];
    o /= g.out[d];
    const std::int64_t id = od * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
    if (id < 0 || id >= g.in[d]) return -1;
    base += id * stride;
    stride *= g.in[d];
  }
  return base;
}

/// col[channels * k, out] from x[channels, in] (zeros where the window reads padding).
template <class T>
void im2col(const T* x, std::int64_t channels, const window_geometry& g, T* col, int threads) {
  const std::int64_t ks = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const std::int64_t ow = g.out.back(), iw = g.in.back(), sw = g.stride.back();
  const std::int64_t rows_of_out = out_size / ow;
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(out_size, 1));
  detail::parallel_for(threads, channels * ks, grain, [&](std::int64_t begin, std::int64_t end) {
    dims k(g.rank());
    for (std::int64_t r = begin; r < end; ++r) {
      std::int64_t c;
      kernel_offsets(r, g, c, k.data());
      const T* xc = x + c * in_size;
      T* dst = col + r * out_size;
      const std::int64_t offset = k.back() * g.dilation.back() - g.pad_begin.back();
      const valid_range v = range_of(offset, sw, iw, ow);
      for (std::int64_t o = 0; o < rows_of_out; ++o, dst += ow) {
        const std::int64_t base = row_base(o, g, k.data());
        if (base < 0) {
          std::fill(dst, dst + ow, T(0));
          continue;
        }
        std::fill(dst, dst + v.lo, T(0));
        const T* src = xc + base + v.lo * sw + offset;
        if (sw == 1) {
          std::memcpy(dst + v.lo, src, static_cast<std::size_t>(v.hi - v.lo) * sizeof(T));
        } else {
          for (std::int64_t i = 0; i < v.hi - v.lo; ++i) dst[v.lo + i] = src[i * sw];
        }
        std::fill(dst + v.hi, dst + ow, T(0));
      }
    }
  });
}

/// The adjoint of im2col: adds col[channels * k, out] into y[channels, in].
template <class T>
void col2im(const T* col, std::int64_t channels, const window_geometry& g, T* y, int threads) {
  const std::int64_t ks = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const std::int64_t ow = g.out.back(), iw = g.in.back(), sw = g.stride.back();
  const std::int64_t rows_of_out = out_size / ow;
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(out_size * ks, 1));
  detail::parallel_for(threads, channels, grain, [&](std::int64_t begin, std::int64_t end) {
    dims k(g.rank());
    for (std::int64_t r = begin * ks; r < end * ks; ++r) {
      std::int64_t c;
      kernel_offsets(r, g, c, k.data());
      T* yc = y + c * in_size;
      const T* src = col + r * out_size;
      const std::int64_t offset = k.back() * g.dilation.back() - g.pad_begin.back();
      const valid_range v = range_of(offset, sw, iw, ow);
      for (std::int64_t o = 0; o < rows_of_out; ++o, src += ow) {
        const std::int64_t base = row_base(o, g, k.data());
        if (base < 0) continue;
        T* dst = yc + base + v.lo * sw + offset;
        for (std::int64_t i = 0; i < v.hi - v.lo; ++i) dst[i * sw] += src[v.lo + i];
      }
    }
  });
}

/// What the packed GEMM's panel source needs to gather im2col blocks of one (image, group).
struct im2col_context {
  const float* x;  // [channels, in...]
  const window_geometry* g;
};

/// Rows [k0, k1) and columns [p0, p1) of the im2col matrix of `context` into dst (leading
/// dim ld): one cache block at a time, so the column matrix never exists in full.
void im2col_block(const void* context, std::int64_t k0, std::int64_t k1, std::int64_t p0, std::int64_t p1, float* dst,
                  std::int64_t ld) {
  const auto& ic = *static_cast<const im2col_context*>(context);
  const window_geometry& g = *ic.g;
  const std::int64_t in_size = g.in_size(), ow = g.out.back(), iw = g.in.back(), sw = g.stride.back();
  std::int64_t k[max_packed_rank];
  for (std::int64_t r = k0; r < k1; ++r) {
    std::int64_t c;
    kernel_offsets(r, g, c, k);
    const float* xc = ic.x + c * in_size;
    float* out = dst + (r - k0) * ld;
    const std::int64_t offset = k[g.rank() - 1] * g.dilation.back() - g.pad_begin.back();
    const valid_range v = range_of(offset, sw, iw, ow);
    std::int64_t o = p0 / ow, q = p0 % ow;
    for (std::int64_t p = p0; p < p1; ++o, q = 0) {
      const std::int64_t end = std::min(ow, q + (p1 - p));  // this output row's part: [q, end)
      const std::int64_t base = row_base(o, g, k);
      if (base < 0) {
        std::fill(out, out + (end - q), 0.0f);
      } else {
        const std::int64_t lo = std::clamp(v.lo, q, end), hi = std::clamp(v.hi, lo, end);
        std::fill(out, out + (lo - q), 0.0f);
        const float* src = xc + base + lo * sw + offset;
        float* d = out + (lo - q);
        const std::int64_t len = hi - lo;
        // Rows are short (the output width): a plain loop beats a memcpy call.
        if (sw == 1) {
          for (std::int64_t i = 0; i < len; ++i) d[i] = src[i];
        } else if (sw == 2) {
          for (std::int64_t i = 0; i < len; ++i) d[i] = src[2 * i];
        } else {
          for (std::int64_t i = 0; i < len; ++i) d[i] = src[i * sw];
        }
        std::fill(out + (hi - q), out + (end - q), 0.0f);
      }
      out += end - q;
      p += end - q;
    }
  }
}

/// rows x cols block of y set to bias[row] (or zero).
template <class T>
void fill_rows(T* y, std::int64_t rows, std::int64_t cols, const T* bias) {
  for (std::int64_t r = 0; r < rows; ++r) std::fill(y + r * cols, y + (r + 1) * cols, bias ? bias[r] : T(0));
}

/// Depthwise (one input channel per group) 1-D/2-D convolution as a direct loop.
template <class T>
void depthwise(const T* x, const T* w, const T* bias, const epilogue<T>* ep, T* y, std::int64_t batch,
               std::int64_t channels, std::int64_t out_channels, const window_geometry& g2, int threads) {
  const std::int64_t h = g2.in[0], wd = g2.in[1], oh = g2.out[0], ow = g2.out[1];
  const std::int64_t kh = g2.kernel[0], kw = g2.kernel[1];
  const std::int64_t sh = g2.stride[0], sw = g2.stride[1], dh = g2.dilation[0], dw = g2.dilation[1];
  const std::int64_t ph = g2.pad_begin[0], pw = g2.pad_begin[1];
  const std::int64_t multiplier = out_channels / channels;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(oh * ow * kh * kw, 1));
  detail::parallel_for(threads, batch * out_channels, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t n = t / out_channels, m = t % out_channels;
      const T* xp = x + (n * channels + m / multiplier) * h * wd;
      const T* wp = w + m * kh * kw;
      T* yp = y + t * oh * ow;
      std::fill(yp, yp + oh * ow, bias ? bias[m] : T(0));
      if (ep && ep->residual) {
        const T* z = ep->residual + t * oh * ow;
        for (std::int64_t i = 0; i < oh * ow; ++i) yp[i] += z[i];
      }
      for (std::int64_t i = 0; i < kh; ++i) {
        for (std::int64_t r = 0; r < oh; ++r) {
          const std::int64_t ih = r * sh - ph + i * dh;
          if (ih < 0 || ih >= h) continue;
          const T* xr = xp + ih * wd;
          T* yr = yp + r * ow;
          for (std::int64_t j = 0; j < kw; ++j) {
            const T wv = wp[i * kw + j];
            const std::int64_t offset = j * dw - pw;
            const valid_range v = range_of(offset, sw, wd, ow);
            const T* src = xr + v.lo * sw + offset;
            T* dst = yr + v.lo;
            const std::int64_t len = v.hi - v.lo;
            if (sw == 1) {
              for (std::int64_t q = 0; q < len; ++q) dst[q] += wv * src[q];
            } else {
              for (std::int64_t q = 0; q < len; ++q) dst[q] += wv * src[q * sw];
            }
          }
        }
      }
      if (ep) activate(ep->act, yp, oh * ow);
    }
  });
}

/// A 1-D geometry as 2-D with a unit leading dim, so one depthwise loop serves both.
window_geometry as_2d(const window_geometry& g) {
  if (g.rank() == 2) return g;
  window_geometry g2;
  g2.in = {1, g.in[0]};
  g2.kernel = {1, g.kernel[0]};
  g2.stride = {1, g.stride[0]};
  g2.dilation = {1, g.dilation[0]};
  g2.pad_begin = {0, g.pad_begin[0]};
  g2.pad_end = {0, g.pad_end[0]};
  g2.out = {1, g.out[0]};
  return g2;
}

bool is_pointwise(const window_geometry& g) {
  for (std::size_t d = 0; d < g.rank(); ++d) {
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0) return false;
  }
  return true;
}

void check_float_inputs(const kernel_context& ctx) {
  require_floating(ctx);
  const data_type t = ctx.input(0).dtype();
  for (std::size_t i = 1; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != t) {
      ctx.fail("input " + std::to_string(i) + " is " + std::string(ir::to_string(ctx.input(i).dtype())) +
               ", input 0 is " + std::string(ir::to_string(t)));
    }
  }
}

/// Checks the optional bias input: a vector of `channels` values. Null when absent.
template <class T>
const T* bias_of(const kernel_context& ctx, std::size_t index, std::int64_t channels) {
  if (!ctx.has_input(index)) return nullptr;
  const tensor& b = ctx.input(index);
  if (b.rank() != 1 || b.dim(0) != channels) {
    ctx.fail("bias of shape " + to_string(b.shape()) + " does not match " + std::to_string(channels) + " output channels");
  }
  return b.data<T>();
}

/// Packs w [M, C/g, k...] as `group` row-major [M/g, C/g * k] blocks of `group_size` floats.
void pack_groups(const float* w, std::int64_t m, std::int64_t k, std::int64_t group, std::size_t group_size, float* out,
                 int threads) {
  for (std::int64_t grp = 0; grp < group; ++grp) {
    pack_weights(w + grp * (m / group) * k, m / group, k, out + static_cast<std::size_t>(grp) * group_size, threads);
  }
}

/// X and W of Conv and ConvTranspose: an [N, C, spatial...] input and weights of its rank.
void check_ranks(const kernel_context& ctx, const tensor& x, const tensor& w) {
  if (x.rank() < 3) ctx.fail("input of shape " + to_string(x.shape()) + " needs a batch, a channel and a spatial dim");
  if (w.rank() != x.rank()) {
    ctx.fail("weights of shape " + to_string(w.shape()) + " do not match input of shape " + to_string(x.shape()));
  }
}

/// The spatial window of the weights, checked against kernel_shape when that is given.
dims window_of(const kernel_context& ctx, const window_attrs& attrs, const tensor& w) {
  const dims window(w.shape().begin() + 2, w.shape().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != window) {
    ctx.fail("kernel_shape " + dims_text(attrs.kernel_shape) + " does not match weights of shape " + to_string(w.shape()));
  }
  return window;
}

/// One Conv run's checked operands and sizes: what every path reads.
template <class T>
struct conv_call {
  const T* x = nullptr;         // [batch, channels, in...]
  const T* w = nullptr;         // [out_channels, group_channels, kernel...]
  const T* bias = nullptr;      // [out_channels], or null
  const T* residual = nullptr;  // FusedConv's Z in y's layout, or null
  T* y = nullptr;               // [batch, out_channels, out...]
  std::int64_t batch = 0, channels = 0, out_channels = 0, group_channels = 0;
  std::int64_t mg = 0, kg = 0;  // one group's product: [mg, kg] weights times [kg, out] columns
  window_geometry g;
  bool pointwise = false;       // 1x1 windows, stride 1, no padding: X_g is its own column matrix
  bool has_epilogue = false;
};

/// Weights packed for nn::gemm_packed: `group_size` floats per group, or null (not packed).
struct packed_weights {
  const float* data = nullptr;
  std::size_t group_size = 0;
};

class conv_kernel final : public kernel {
 public:
  /// `fused`: a FusedConv, which takes a residual Z as input 3 and applies `act`.
  conv_kernel(window_attrs attrs, std::int64_t group, bool fused = false, activation_spec act = {})
      : attrs_(std::move(attrs)), group_(group), fused_(fused), act_(act) {}

  /// Remembers constant float weights and packs them now for the path their convolution will
  /// take (Winograd when the attributes allow it and the input's declared shape, if any, is
  /// large enough); a path first needed later packs them then, once.
  void prepack(const ir::tensor& w, const ir::value* input) {
    if (w.dtype != data_type::float32 || !w.has_data() || w.dims.size() < 3 || w.dims.size() > max_packed_rank + 2) return;
    const std::int64_t m = w.dims[0], k = ir::tensor::element_count(std::span(w.dims).subspan(1));
    if (m <= 0 || k <= 0 || m % group_ != 0 || w.byte_size() != static_cast<std::size_t>(m * k) * sizeof(float)) return;
    if (w.dims[1] == 1 && w.dims.size() <= 4) return;  // depthwise: a direct loop, no GEMM
    constant_ = w.bytes->data();
    const float* data = reinterpret_cast<const float*>(w.bytes->data());
    if (winograd_likely(w.dims, input)) {
      pack_winograd(data, m, w.dims[1]);
    } else {
      pack_regular(data, m, k);
    }
  }

  void compute(kernel_context& ctx) override {
    check_float_inputs(ctx);
    if (ctx.input(0).dtype() == data_type::float32) run<float>(ctx);
    else run<double>(ctx);
  }

 private:
  /// Whether Winograd will probably serve this conv: 3x3, stride 1, dilation 1, one group and
  /// an output that winograd_applies to (when the input's shape is declared).
  bool winograd_likely(const dims& w, const ir::value* input) const {
    if (group_ != 1 || w.size() != 4 || w[2] != 3 || w[3] != 3) return false;
    auto ones = [](const dims& d) { return std::all_of(d.begin(), d.end(), [](std::int64_t v) { return v == 1; }); };
    if (!ones(attrs_.strides) || !ones(attrs_.dilations)) return false;
    if (!input || !input->type() || !input->type()->dims || input->type()->dims->size() != 4) return true;
    const auto& shape = *input->type()->dims;
    if (!shape[2].is_static() || !shape[3].is_static()) return true;
    window_geometry g;
    g.kernel = {3, 3};
    g.stride = g.dilation = {1, 1};
    g.in = {shape[2].value(), shape[3].value()};
    g.out = g.in;
    if (attrs_.pad_mode == auto_pad::valid) g.out = {g.in[0] - 2, g.in[1] - 2};
    if (attrs_.pad_mode == auto_pad::notset && attrs_.pads.size() == 4) {
      g.out = {g.in[0] + attrs_.pads[0] + attrs_.pads[2] - 2, g.in[1] + attrs_.pads[1] + attrs_.pads[3] - 2};
    } else if (attrs_.pad_mode == auto_pad::notset) {
      g.out = {g.in[0] - 2, g.in[1] - 2};
    }
    return winograd_applies(g);
  }

  void pack_regular(const float* w, std::int64_t m, std::int64_t k, int threads = 1) {
    packed_group_size_ = packed_size(m / group_, k);
    packed_ = tensor(data_type::float32, {static_cast<std::int64_t>(packed_group_size_ * group_)});
    pack_groups(w, m, k, group_, packed_group_size_, packed_.mutable_data<float>(), threads);
  }

  void pack_winograd(const float* w, std::int64_t m, std::int64_t c) {
    winograd_ = tensor(data_type::float32, {static_cast<std::int64_t>(winograd_packed_size(m, c))});
    winograd_pack(w, m, c, winograd_.mutable_data<float>());
  }

  template <class T>
  void run(kernel_context& ctx) {
    conv_call<T> c;
    if (!prepare_call(ctx, c)) return;
    const int threads = ctx.threads();
    if (c.group_channels == 1 && c.g.rank() <= 2) {
      const epilogue<T> e = epilogue_at(c, 0);
      depthwise(c.x, c.w, c.bias, c.has_epilogue ? &e : nullptr, c.y, c.batch, c.channels, c.out_channels, as_2d(c.g),
                threads);
      return;
    }
    // float: Winograd for large 3x3 maps, else packed weights and columns gathered block by
    // block. double: im2col into scratch, then gemm.
    packed_weights packed;
    if constexpr (std::is_same_v<T, float>) {
      const bool constant = constant_ && ctx.input(1).raw() == constant_;
      // Winograd only for constant weights: transforming them on every run would cost about
      // what it saves.
      if (constant && group_ == 1 && winograd_applies(c.g)) {
        run_winograd(c, threads);
        return;
      }
      if (c.g.rank() <= max_packed_rank) packed = pack_for_run(ctx, c, constant, threads);
    }
    run_products(c, packed, threads);
  }

  /// Every (image, group) product: small ones side by side on one thread each, large ones
  /// one at a time with the GEMM parallel inside.
  template <class T>
  void run_products(const conv_call<T>& c, const packed_weights& packed, int threads) const {
    const std::int64_t tasks = c.batch * group_;
    if (threads > 1 && tasks > 1 && 2 * c.mg * c.kg * c.g.out_size() < small_gemm_flops) {
      detail::parallel_for(threads, tasks, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t t = begin; t < end; ++t) product(c, packed, t, 1);
      });
    } else {
      for (std::int64_t t = 0; t < tasks; ++t) product(c, packed, t, threads);
    }
  }

  /// Checks the operands and allocates y; false when y is empty (nothing to compute).
  template <class T>
  bool prepare_call(kernel_context& ctx, conv_call<T>& c) const {
    const tensor& x = ctx.input(0);
    const tensor& w = ctx.input(1);
    check_ranks(ctx, x, w);
    c.batch = x.dim(0);
    c.channels = x.dim(1);
    c.out_channels = w.dim(0);
    c.group_channels = w.dim(1);
    if (c.channels != c.group_channels * group_) {
      ctx.fail("input has " + std::to_string(c.channels) + " channels but weights of shape " + to_string(w.shape()) +
               " with group " + std::to_string(group_) + " expect " + std::to_string(c.group_channels * group_));
    }
    if (c.out_channels % group_ != 0) {
      ctx.fail(std::to_string(c.out_channels) + " output channels are not divisible by group " + std::to_string(group_));
    }
    const dims window = window_of(ctx, attrs_, w);
    c.bias = bias_of<T>(ctx, 2, c.out_channels);
    c.g = resolve_window(ctx, attrs_, dims(x.shape().begin() + 2, x.shape().end()), window);
    shape_t y_shape{c.batch, c.out_channels};
    y_shape.insert(y_shape.end(), c.g.out.begin(), c.g.out.end());
    c.residual = fused_residual<T>(ctx, y_shape);
    tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    if (y.element_count() == 0) return false;
    c.x = x.data<T>();
    c.w = w.data<T>();
    c.y = y.mutable_data<T>();
    c.mg = c.out_channels / group_;
    c.kg = c.group_channels * c.g.kernel_size();
    c.pointwise = is_pointwise(c.g);
    c.has_epilogue = c.residual || act_.kind != activation::identity;
    return true;
  }

  /// The epilogue of the product that writes y at `offset` (the residual has y's layout).
  template <class T>
  epilogue<T> epilogue_at(const conv_call<T>& c, std::int64_t offset) const {
    return epilogue<T>{act_, c.residual ? c.residual + offset : nullptr, c.g.out_size()};
  }

  /// Winograd F(2x2, 3x3), image by image; the weights are transformed on first need.
  void run_winograd(const conv_call<float>& c, int threads) {
    if (winograd_.empty()) pack_winograd(c.w, c.out_channels, c.channels);
    const std::int64_t in_size = c.g.in_size(), out_size = c.g.out_size();
    for (std::int64_t n = 0; n < c.batch; ++n) {
      const epilogue<float> e = epilogue_at(c, n * c.out_channels * out_size);
      winograd_conv(winograd_.data<float>(), c.out_channels, c.channels, c.x + n * c.channels * in_size, c.g, c.bias,
                    c.has_epilogue ? &e : nullptr, c.y + n * c.out_channels * out_size, threads);
    }
  }

  /// Constant weights are packed once and kept; others are packed into the step's scratch.
  packed_weights pack_for_run(kernel_context& ctx, const conv_call<float>& c, bool constant, int threads) {
    if (constant) {
      if (packed_.empty()) pack_regular(c.w, c.out_channels, c.kg, threads);
      return {packed_.data<float>(), packed_group_size_};
    }
    const std::size_t group_size = packed_size(c.mg, c.kg);
    auto* buffer = reinterpret_cast<float*>(ctx.scratch(group_size * static_cast<std::size_t>(group_) * sizeof(float)));
    pack_groups(c.w, c.out_channels, c.kg, group_, group_size, buffer, threads);
    return {buffer, group_size};
  }

  /// One (image, group) product: Y_g = W_g * (X_g or its columns) + bias_g.
  template <class T>
  void product(const conv_call<T>& c, const packed_weights& packed, std::int64_t t, int inner_threads) const {
    const std::int64_t n = t / group_, grp = t % group_;
    const std::int64_t in_size = c.g.in_size(), out_size = c.g.out_size();
    const T* xg = c.x + (n * c.channels + grp * c.group_channels) * in_size;
    T* yg = c.y + (n * c.out_channels + grp * c.mg) * out_size;
    const T* bg = c.bias ? c.bias + grp * c.mg : nullptr;
    const epilogue<T> e = epilogue_at(c, (n * c.out_channels + grp * c.mg) * out_size);
    const epilogue<T>* ep = c.has_epilogue ? &e : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (packed.data) {
        const float* pw = packed.data + static_cast<std::size_t>(grp) * packed.group_size;
        if (c.pointwise) {
          gemm_packed(pw, c.mg, c.kg, out_size, xg, out_size, nullptr, nullptr, bg, ep, yg, out_size, inner_threads);
        } else {
          const im2col_context source{xg, &c.g};
          gemm_packed(pw, c.mg, c.kg, out_size, nullptr, 0, im2col_block, &source, bg, ep, yg, out_size, inner_threads);
        }
        return;
      }
    }
    product_unpacked(c, c.w + grp * c.mg * c.kg, xg, bg, ep, yg, inner_threads);
  }

  /// The product without packed weights: bias rows, columns (im2col into scratch unless
  /// pointwise), nn::gemm onto the rows, then the epilogue.
  template <class T>
  static void product_unpacked(const conv_call<T>& c, const T* wg, const T* xg, const T* bg, const epilogue<T>* ep,
                               T* yg, int inner_threads) {
    const std::int64_t out_size = c.g.out_size();
    fill_rows(yg, c.mg, out_size, bg);
    const T* cols = xg;
    if (!c.pointwise) {
      T* buffer = scratch<T>(static_cast<std::size_t>(c.kg * out_size));
      im2col(xg, c.group_channels, c.g, buffer, inner_threads);
      cols = buffer;
    }
    gemm_args<T> a;
    a.m = c.mg;
    a.n = out_size;
    a.k = c.kg;
    a.a = wg;
    a.lda = c.kg;
    a.b = cols;
    a.ldb = out_size;
    a.c = yg;
    a.ldc = out_size;
    a.beta = T(1);
    gemm(a, inner_threads);
    // Eigen's product cannot call back per tile; this (image, group) block is the unit here.
    if (ep) apply_epilogue(*ep, yg, out_size, c.mg, out_size);
  }

  /// FusedConv's Z (input 3): null when absent or for plain Conv.
  /// @throws via ctx.fail when its type or shape differs from the output's.
  template <class T>
  const T* fused_residual(const kernel_context& ctx, const shape_t& y_shape) const {
    if (!fused_ || !ctx.has_input(3)) return nullptr;
    const tensor& z = ctx.input(3);
    if (z.shape() != y_shape) {
      ctx.fail("Z of shape " + to_string(z.shape()) + " does not match the output shape " + to_string(y_shape));
    }
    return z.data<T>();
  }

  window_attrs attrs_;
  std::int64_t group_;
  bool fused_;
  activation_spec act_;
  // Constant weights, packed once per path on first need; `constant_` is the initializer's
  // data, which the graph (owned by the session, like this kernel) keeps alive. A graph input
  // may override its initializer, so every run checks that the weights still are that data.
  const void* constant_ = nullptr;
  tensor packed_;  // float32: group blocks of packed_group_size_ floats, for gemm_packed
  std::size_t packed_group_size_ = 0;
  tensor winograd_;  // float32: winograd_packed_size floats, for winograd_conv
};

class conv_transpose_kernel final : public kernel {
 public:
  conv_transpose_kernel(window_attrs attrs, std::int64_t group, dims output_padding, dims output_shape)
      : attrs_(std::move(attrs)),
        group_(group),
        output_padding_(std::move(output_padding)),
        output_shape_(std::move(output_shape)) {}

  void compute(kernel_context& ctx) override {
    check_float_inputs(ctx);
    if (ctx.input(0).dtype() == data_type::float32) run<float>(ctx);
    else run<double>(ctx);
  }

 private:
  /// The geometry of the forward conv that ConvTranspose inverts: its `in` is our output.
  window_geometry geometry(const kernel_context& ctx, const dims& in, const dims& window) const {
    const std::size_t rank = in.size();
    auto pick = [&](const dims& d, std::int64_t fallback, std::size_t want, const char* name) {
      if (d.empty()) return dims(want, fallback);
      if (d.size() != want) ctx.fail(std::string(name) + " " + dims_text(d) + " does not match " + std::to_string(rank) + " spatial dims");
      return d;
    };
    window_geometry g;
    g.out = in;
    g.kernel = window;
    g.stride = pick(attrs_.strides, 1, rank, "strides");
    g.dilation = pick(attrs_.dilations, 1, rank, "dilations");
    const dims pads = pick(attrs_.pads, 0, 2 * rank, "pads");
    const dims out_pad = pick(output_padding_, 0, rank, "output_padding");
    dims wanted;
    if (!output_shape_.empty()) {
      // Some exporters write the full [N, C, spatial...] shape.
      wanted = output_shape_.size() == rank + 2 ? dims(output_shape_.begin() + 2, output_shape_.end())
                                                 : pick(output_shape_, 0, rank, "output_shape");
    }
    g.in.resize(rank);
    g.pad_begin.resize(rank);
    g.pad_end.resize(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t span = g.dilation[d] * (window[d] - 1) + 1;
      const std::int64_t full = g.stride[d] * (in[d] - 1) + out_pad[d] + span;
      if (!wanted.empty() || attrs_.pad_mode == auto_pad::same_upper || attrs_.pad_mode == auto_pad::same_lower) {
        g.in[d] = !wanted.empty() ? wanted[d] : in[d] * g.stride[d];
        const std::int64_t total = full - g.in[d];
        // Floor division: an output_shape larger than the natural one (negative total) adds
        // the extra positions at the end, as ONNX's reference does.
        const std::int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2);
        g.pad_begin[d] = attrs_.pad_mode == auto_pad::same_upper ? small : total - small;
        g.pad_end[d] = total - g.pad_begin[d];
      } else {
        g.pad_begin[d] = attrs_.pad_mode == auto_pad::valid ? 0 : pads[d];
        g.pad_end[d] = attrs_.pad_mode == auto_pad::valid ? 0 : pads[d + rank];
        g.in[d] = full - g.pad_begin[d] - g.pad_end[d];
      }
      if (g.in[d] <= 0) ctx.fail("output spatial dim " + std::to_string(d) + " would be " + std::to_string(g.in[d]));
    }
    return g;
  }

  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    const tensor& w = ctx.input(1);
    check_ranks(ctx, x, w);
    const std::int64_t batch = x.dim(0), channels = x.dim(1);
    if (w.dim(0) != channels || channels % group_ != 0) {
      ctx.fail("input has " + std::to_string(channels) + " channels but weights of shape " + to_string(w.shape()) +
               " with group " + std::to_string(group_) + " do not take them");
    }
    const std::int64_t group_channels = channels / group_, mg = w.dim(1), out_channels = mg * group_;
    const dims window = window_of(ctx, attrs_, w);
    const T* bias = bias_of<T>(ctx, 2, out_channels);
    const window_geometry g = geometry(ctx, dims(x.shape().begin() + 2, x.shape().end()), window);
    shape_t y_shape{batch, out_channels};
    y_shape.insert(y_shape.end(), g.in.begin(), g.in.end());
    tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    if (y.element_count() == 0) return;

    const T* xd = x.data<T>();
    const T* wd = w.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t in_size = g.out_size(), out_size = g.in_size(), rows = mg * g.kernel_size();
    const bool pointwise = is_pointwise(g) && in_size == out_size;
    const int threads = ctx.threads();
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t grp = 0; grp < group_; ++grp) {
        T* yg = yd + (n * out_channels + grp * mg) * out_size;
        fill_rows(yg, mg, out_size, bias ? bias + grp * mg : nullptr);
        T* cols = pointwise ? yg : scratch<T>(static_cast<std::size_t>(rows * in_size));
        gemm_args<T> a;
        a.m = rows;
        a.n = in_size;
        a.k = group_channels;
        a.a = wd + grp * group_channels * rows;
        a.lda = rows;
        a.trans_a = true;
        a.b = xd + (n * channels + grp * group_channels) * in_size;
        a.ldb = in_size;
        a.c = cols;
        a.ldc = in_size;
        a.beta = pointwise ? T(1) : T(0);
        gemm(a, threads);
        if (!pointwise) col2im(cols, mg, g, yg, threads);
      }
    }
  }

  window_attrs attrs_;
  std::int64_t group_;
  dims output_padding_;
  dims output_shape_;
};

std::int64_t group_of(const kernel_build_info& info) {
  const std::int64_t group = info.node.attr_int("group", 1);
  if (group < 1) info.fail("group " + std::to_string(group) + " must be positive");
  return group;
}

}  // namespace

void register_conv_kernels(kernel_registry& r) {
  r.add("", "Conv", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    auto k = std::make_unique<conv_kernel>(parse_window_attrs(info, false), group_of(info));
    if (const ir::value* w = info.node.input(1); w && w->initializer()) k->prepack(*w->initializer(), info.node.input(0));
    return k;
  });
  r.add("com.microsoft", "FusedConv", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    auto k = std::make_unique<conv_kernel>(parse_window_attrs(info, false), group_of(info), true,
                                           fused_conv_activation(info));
    if (const ir::value* w = info.node.input(1); w && w->initializer()) k->prepack(*w->initializer(), info.node.input(0));
    return k;
  });
  r.add("", "ConvTranspose", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    window_attrs attrs = parse_window_attrs(info, false);
    dims output_padding = info.node.attr_ints("output_padding", {});
    if (std::any_of(output_padding.begin(), output_padding.end(), [](std::int64_t v) { return v < 0; })) {
      info.fail("output_padding " + dims_text(output_padding) + " must not be negative");
    }
    dims output_shape = info.node.attr_ints("output_shape", {});
    if (std::any_of(output_shape.begin(), output_shape.end(), [](std::int64_t v) { return v <= 0; })) {
      info.fail("output_shape " + dims_text(output_shape) + " must be positive");
    }
    return std::make_unique<conv_transpose_kernel>(std::move(attrs), group_of(info), std::move(output_padding),
                                                   std::move(output_shape));
  });
}

}  // namespace inferopt::runtime::nn
