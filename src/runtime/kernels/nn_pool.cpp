// Pools and LRN: MaxPool (with the optional Indices output), AveragePool, GlobalAveragePool,
// GlobalMaxPool, LRN. float32 and float64; MaxPool also int8 and uint8 (opset 12).
//
// Windowed pools treat 1-D and 2-D inputs as 3-D with unit leading dims and walk each output
// row once per window tap, so the innermost loop is a contiguous (or strided) max/add along
// the output row that the compiler vectorizes; planes (n, c) run in parallel. Padding never
// contributes: a max ignores it, an average divides by the taps inside the input (or inside
// the padded input with count_include_pad). The Indices path is a plain per-window loop.
// Results are exact for max; averages are float sums of at most prod(kernel) terms.

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_util.hpp"
#include "nn_common.hpp"

namespace inferopt::runtime::nn {

namespace {

/// A window geometry of rank <= 3 padded to exactly 3 dims.
struct geometry3 {
  std::int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
  [[nodiscard]] std::int64_t in_size() const { return in[0] * in[1] * in[2]; }
  [[nodiscard]] std::int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

geometry3 to_3d(const window_geometry& g) {
  geometry3 r{};
  const std::size_t lead = 3 - g.rank();
  for (std::size_t i = 0; i < 3; ++i) {
    const bool real = i >= lead;
    const std::size_t j = real ? i - lead : 0;
    r.in[i] = real ? g.in[j] : 1;
    r.k[i] = real ? g.kernel[j] : 1;
    r.s[i] = real ? g.stride[j] : 1;
    r.d[i] = real ? g.dilation[j] : 1;
    r.pb[i] = real ? g.pad_begin[j] : 0;
    r.pe[i] = real ? g.pad_end[j] : 0;
    r.out[i] = real ? g.out[j] : 1;
  }
  return r;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// Taps t in [lo, hi) of the window starting at `start` whose position start + t*d is in [0, in).
struct taps {
  std::int64_t lo, hi;
};
taps taps_of(std::int64_t start, std::int64_t k, std::int64_t d, std::int64_t in) {
  const std::int64_t lo = start >= 0 ? 0 : std::min(k, ceil_div(-start, d));
  const std::int64_t hi = in - start <= 0 ? 0 : std::min(k, ceil_div(in - start, d));
  return {lo, std::max(lo, hi)};
}

/// Output positions o in [lo, hi) whose input position o*s + offset lies in [0, in).
taps outputs_reading(std::int64_t offset, std::int64_t s, std::int64_t in, std::int64_t out) {
  std::int64_t lo = offset >= 0 ? 0 : ceil_div(-offset, s);
  std::int64_t hi = in - offset <= 0 ? 0 : ceil_div(in - offset, s);
  lo = std::min(lo, out);
  return {lo, std::clamp(hi, lo, out)};
}

/// Visits every (output row, input row, tap along the last dim) of one plane:
/// fn(out_row, in_row, first_out, count, in_offset_of_first) with input stride s[2].
template <class Fn>
void for_each_row_tap(const geometry3& g, Fn&& fn) {
  for (std::int64_t od = 0; od < g.out[0]; ++od) {
    const taps td = taps_of(od * g.s[0] - g.pb[0], g.k[0], g.d[0], g.in[0]);
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh) {
      const taps th = taps_of(oh * g.s[1] - g.pb[1], g.k[1], g.d[1], g.in[1]);
      const std::int64_t out_row = (od * g.out[1] + oh) * g.out[2];
      for (std::int64_t a = td.lo; a < td.hi; ++a) {
        const std::int64_t id = od * g.s[0] - g.pb[0] + a * g.d[0];
        for (std::int64_t b = th.lo; b < th.hi; ++b) {
          const std::int64_t ih = oh * g.s[1] - g.pb[1] + b * g.d[1];
          const std::int64_t in_row = (id * g.in[1] + ih) * g.in[2];
          for (std::int64_t c = 0; c < g.k[2]; ++c) {
            const std::int64_t offset = c * g.d[2] - g.pb[2];
            const taps q = outputs_reading(offset, g.s[2], g.in[2], g.out[2]);
            if (q.hi > q.lo) fn(out_row, in_row, q.lo, q.hi - q.lo, q.lo * g.s[2] + offset);
          }
        }
      }
    }
  }
}

template <class T>
constexpr T lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
}

template <class T>
void max_plane(const T* x, T* y, const geometry3& g) {
  std::fill(y, y + g.out_size(), lowest<T>());
  const std::int64_t s = g.s[2];
  for_each_row_tap(g, [&](std::int64_t out_row, std::int64_t in_row, std::int64_t first, std::int64_t count,
                          std::int64_t in_offset) {
    T* dst = y + out_row + first;
    const T* src = x + in_row + in_offset;
    if (s == 1) {
      for (std::int64_t i = 0; i < count; ++i) dst[i] = src[i] > dst[i] ? src[i] : dst[i];
    } else {
      for (std::int64_t i = 0; i < count; ++i) dst[i] = src[i * s] > dst[i] ? src[i * s] : dst[i];
    }
  });
}

/// Per-dim count of the taps that an average divides by, for each output position.
std::vector<std::int64_t> divisors(std::int64_t out, std::int64_t k, std::int64_t s, std::int64_t d, std::int64_t pb,
                                   std::int64_t pe, std::int64_t in, bool include_pad) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t start = o * s - pb;
    const taps t = include_pad ? taps_of(start + pb, k, d, in + pb + pe) : taps_of(start, k, d, in);
    c[o] = t.hi - t.lo;
  }
  return c;
}

template <class T>
void average_plane(const T* x, T* y, const geometry3& g, const std::vector<std::int64_t> (&div)[3]) {
  std::fill(y, y + g.out_size(), T(0));
  const std::int64_t s = g.s[2];
  for_each_row_tap(g, [&](std::int64_t out_row, std::int64_t in_row, std::int64_t first, std::int64_t count,
                          std::int64_t in_offset) {
    T* dst = y + out_row + first;
    const T* src = x + in_row + in_offset;
    if (s == 1) {
      for (std::int64_t i = 0; i < count; ++i) dst[i] += src[i];
    } else {
      for (std::int64_t i = 0; i < count; ++i) dst[i] += src[i * s];
    }
  });
  for (std::int64_t od = 0; od < g.out[0]; ++od) {
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh) {
      T* row = y + (od * g.out[1] + oh) * g.out[2];
      const std::int64_t outer = div[0][od] * div[1][oh];
      for (std::int64_t ow = 0; ow < g.out[2]; ++ow) {
        const std::int64_t n = outer * div[2][ow];
        // A window that covers no counted tap (only possible past ceil_mode edges) is NaN, as 0/0.
        row[ow] = n > 0 ? row[ow] / static_cast<T>(n) : std::numeric_limits<T>::quiet_NaN();
      }
    }
  }
}

/// MaxPool with indices: a plain per-window loop. Indices are flat over the whole input,
/// row-major (storage_order 0) or column-major over the spatial dims (storage_order 1).
template <class T>
void max_plane_with_indices(const T* x, T* y, std::int64_t* indices, std::int64_t plane, const geometry3& g,
                            bool column_major) {
  const std::int64_t plane_offset = plane * g.in_size();
  std::int64_t o = 0;
  for (std::int64_t od = 0; od < g.out[0]; ++od) {
    const taps td = taps_of(od * g.s[0] - g.pb[0], g.k[0], g.d[0], g.in[0]);
    for (std::int64_t oh = 0; oh < g.out[1]; ++oh) {
      const taps th = taps_of(oh * g.s[1] - g.pb[1], g.k[1], g.d[1], g.in[1]);
      for (std::int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        const taps tw = taps_of(ow * g.s[2] - g.pb[2], g.k[2], g.d[2], g.in[2]);
        T best = lowest<T>();
        std::int64_t at = -1, bd = 0, bh = 0, bw = 0;
        for (std::int64_t a = td.lo; a < td.hi; ++a) {
          const std::int64_t id = od * g.s[0] - g.pb[0] + a * g.d[0];
          for (std::int64_t b = th.lo; b < th.hi; ++b) {
            const std::int64_t ih = oh * g.s[1] - g.pb[1] + b * g.d[1];
            for (std::int64_t c = tw.lo; c < tw.hi; ++c) {
              const std::int64_t iw = ow * g.s[2] - g.pb[2] + c * g.d[2];
              const T v = x[(id * g.in[1] + ih) * g.in[2] + iw];
              if (at < 0 || v > best) {
                best = v;
                at = 0;
                bd = id;
                bh = ih;
                bw = iw;
              }
            }
          }
        }
        y[o] = best;
        const std::int64_t local = column_major ? bd + g.in[0] * (bh + g.in[1] * bw) : (bd * g.in[1] + bh) * g.in[2] + bw;
        indices[o] = at < 0 ? -1 : plane_offset + local;
      }
    }
  }
}

class pool_kernel final : public kernel {
 public:
  enum class kind { max, average };

  pool_kernel(kind k, window_attrs attrs, bool count_include_pad, bool column_major)
      : kind_(k), attrs_(std::move(attrs)), count_include_pad_(count_include_pad), column_major_(column_major) {}

  void compute(kernel_context& ctx) override {
    const data_type t = ctx.input(0).dtype();
    switch (t) {
      case data_type::float32: return run<float>(ctx);
      case data_type::float64: return run<double>(ctx);
      case data_type::int8:
        if (kind_ == kind::max) return run<std::int8_t>(ctx);
        break;
      case data_type::uint8:
        if (kind_ == kind::max) return run<std::uint8_t>(ctx);
        break;
      default: break;
    }
    ctx.unsupported("element type " + std::string(ir::to_string(t)) + " is not supported");
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    const std::size_t spatial = attrs_.kernel_shape.size();
    if (x.rank() != spatial + 2) {
      ctx.fail("input of shape " + to_string(x.shape()) + " does not match kernel_shape " + dims_text(attrs_.kernel_shape));
    }
    if (spatial > 3) ctx.unsupported("pools over more than 3 spatial dims are not supported");
    const window_geometry wg = resolve_window(ctx, attrs_, dims(x.shape().begin() + 2, x.shape().end()), attrs_.kernel_shape);
    const geometry3 g = to_3d(wg);
    shape_t y_shape{x.dim(0), x.dim(1)};
    y_shape.insert(y_shape.end(), wg.out.begin(), wg.out.end());
    tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    const bool with_indices = kind_ == kind::max && ctx.wants_output(1);
    std::int64_t* indices = with_indices ? ctx.allocate_output(1, data_type::int64, y_shape).mutable_data<std::int64_t>() : nullptr;
    const std::int64_t planes = x.dim(0) * x.dim(1);
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t in_size = g.in_size(), out_size = g.out_size();
    const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(out_size * wg.kernel_size(), 1));
    if (kind_ == kind::average) {
      if constexpr (std::is_floating_point_v<T>) {
        std::vector<std::int64_t> div[3];
        for (int i = 0; i < 3; ++i) {
          div[i] = divisors(g.out[i], g.k[i], g.s[i], g.d[i], g.pb[i], g.pe[i], g.in[i], count_include_pad_);
        }
        detail::parallel_for(ctx.threads(), planes, grain, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t p = b; p < e; ++p) average_plane(xd + p * in_size, yd + p * out_size, g, div);
        });
      }
      return;
    }
    detail::parallel_for(ctx.threads(), planes, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t p = b; p < e; ++p) {
        if (indices) {
          max_plane_with_indices(xd + p * in_size, yd + p * out_size, indices + p * out_size, p, g, column_major_);
        } else {
          max_plane(xd + p * in_size, yd + p * out_size, g);
        }
      }
    });
  }

  kind kind_;
  window_attrs attrs_;
  bool count_include_pad_;
  bool column_major_;
};

class global_pool_kernel final : public kernel {
 public:
  explicit global_pool_kernel(bool max) : max_(max) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("input of shape " + to_string(x.shape()) + " has no channel dim");
    shape_t y_shape(x.rank(), 1);
    y_shape[0] = x.dim(0);
    y_shape[1] = x.dim(1);
    tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    const std::int64_t planes = x.dim(0) * x.dim(1), size = detail::product(x.shape(), 2);
    if (planes == 0) return;
    if (size == 0 && max_) ctx.fail("global max over an empty plane");
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    detail::parallel_for(ctx.threads(), planes, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(size, 1)),
                         [&](std::int64_t b, std::int64_t e) {
                           for (std::int64_t p = b; p < e; ++p) {
                             const T* v = xd + p * size;
                             if (max_) {
                               T m = v[0];
                               for (std::int64_t i = 1; i < size; ++i) m = v[i] > m ? v[i] : m;
                               yd[p] = m;
                             } else {
                               T s = 0;
                               for (std::int64_t i = 0; i < size; ++i) s += v[i];
                               yd[p] = s / static_cast<T>(size);
                             }
                           }
                         });
  }

  bool max_;
};

/// LRN: y = x / (bias + alpha/size * sum of x^2 over the channel window)^beta, the window
/// reaching floor((size-1)/2) channels back and ceil((size-1)/2) forward.
class lrn_kernel final : public kernel {
 public:
  lrn_kernel(std::int64_t size, float alpha, float beta, float bias) : size_(size), alpha_(alpha), beta_(beta), bias_(bias) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("input of shape " + to_string(x.shape()) + " has no channel dim");
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const std::int64_t channels = x.dim(1), size = detail::product(x.shape(), 2);
    const std::int64_t planes = x.dim(0) * channels;
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t back = (size_ - 1) / 2, forward = size_ - 1 - back;
    const T scale = static_cast<T>(alpha_) / static_cast<T>(size_), bias = static_cast<T>(bias_), beta = static_cast<T>(beta_);
    detail::parallel_for(ctx.threads(), planes, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<T> sum(static_cast<std::size_t>(size));
      for (std::int64_t p = b; p < e; ++p) {
        const std::int64_t n = p / channels, c = p % channels;
        std::fill(sum.begin(), sum.end(), T(0));
        for (std::int64_t k = std::max<std::int64_t>(0, c - back); k <= std::min(channels - 1, c + forward); ++k) {
          const T* v = xd + (n * channels + k) * size;
          for (std::int64_t i = 0; i < size; ++i) sum[i] += v[i] * v[i];
        }
        const T* v = xd + p * size;
        T* out = yd + p * size;
        for (std::int64_t i = 0; i < size; ++i) out[i] = v[i] / std::pow(bias + scale * sum[i], beta);
      }
    });
  }

  std::int64_t size_;
  float alpha_, beta_, bias_;
};

window_attrs pool_attrs(const kernel_build_info& info, bool with_ceil, bool with_dilations) {
  window_attrs a = parse_window_attrs(info, with_ceil, with_dilations);
  if (a.kernel_shape.empty()) info.fail("kernel_shape is required");
  return a;
}

}  // namespace

void register_pool_kernels(kernel_registry& r) {
  r.add("", "MaxPool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const std::int64_t order = info.node.attr_int("storage_order", 0);
    if (order != 0 && order != 1) info.fail("storage_order " + std::to_string(order) + " is not 0 or 1");
    return std::make_unique<pool_kernel>(pool_kernel::kind::max, pool_attrs(info, true, true), false, order == 1);
  });
  r.add("", "AveragePool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<pool_kernel>(pool_kernel::kind::average, pool_attrs(info, true, true),
                                         info.node.attr_int("count_include_pad", 0) != 0, false);
  });
  r.add("", "GlobalAveragePool", [](const kernel_build_info&) -> std::unique_ptr<kernel> {
    return std::make_unique<global_pool_kernel>(false);
  });
  r.add("", "GlobalMaxPool", [](const kernel_build_info&) -> std::unique_ptr<kernel> {
    return std::make_unique<global_pool_kernel>(true);
  });
  r.add("", "LRN", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const ir::node& n = info.node;
    if (!n.find_attribute("size")) info.fail("size is required");
    const std::int64_t size = n.attr_int("size", 1);
    if (size < 1) info.fail("size " + std::to_string(size) + " must be positive");
    return std::make_unique<lrn_kernel>(size, n.attr_float("alpha", 1e-4f), n.attr_float("beta", 0.75f),
                                        n.attr_float("bias", 1.0f));
  });
}

}  // namespace inferopt::runtime::nn
