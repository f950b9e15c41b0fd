// Resize (opsets 10-19) and Upsample (7-9), following the ONNX reference implementation.
//
// Strategy: every output coordinate along an axis maps to a source coordinate (the
// coordinate_transformation_mode) and from there to a window of source indices with weights
// (the mode). Resizing is separable, so
//  - nearest is a pure gather: one source index per output index and axis, any element type;
//  - linear and cubic (and their antialiased forms) run one 1-D pass per resized axis over a
//    double buffer, then round (integers: half to even, saturated) into the output type.
// Axes whose scale is 1 and size unchanged are skipped, as the reference does. Float linear
// resizing of the last two axes has its own path in float (resize_bilinear_float).

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

enum class resize_mode { nearest, linear, cubic };
enum class coordinate_mode {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize,
};
// `legacy` is Resize-10 and Upsample: truncate when upsampling, ceil when downsampling.
enum class nearest_rule { round_prefer_floor, round_prefer_ceil, floor, ceil, legacy };
enum class aspect_policy { stretch, not_larger, not_smaller };

/// What each output index along an axis reads: `taps` source indices (clamped into the input)
/// with their weights, or one source index (nearest), or the extrapolation value.
struct axis_plan {
  std::int64_t in = 0;
  std::int64_t out = 0;
  bool identity = false;
  std::size_t taps = 0;                 // weights per output index
  std::vector<double> weights;          // out * taps
  std::vector<std::int64_t> index;      // out * taps, source indices clamped into [0, in)
  std::vector<std::int64_t> nearest;    // per output index (nearest mode)
  std::vector<bool> extrapolated;       // per output index (tf_crop_and_resize)
};

struct resize_settings {
  resize_mode mode = resize_mode::nearest;
  coordinate_mode coordinates = coordinate_mode::half_pixel;
  nearest_rule rule = nearest_rule::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  aspect_policy policy = aspect_policy::stretch;
};

double source_coordinate(const resize_settings& s, double x, double scale, std::int64_t in, std::int64_t out,
                         double roi_start, double roi_end) {
  const double length = scale * static_cast<double>(in);  // the reference's (float) output width
  const auto n = static_cast<double>(in);
  switch (s.coordinates) {
    case coordinate_mode::half_pixel: return (x + 0.5) / scale - 0.5;
    case coordinate_mode::half_pixel_symmetric: {
      const double adjustment = static_cast<double>(out) / length;
      const double offset = n / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case coordinate_mode::pytorch_half_pixel: return length == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case coordinate_mode::align_corners: return length == 1 ? 0.0 : x * (n - 1) / (length - 1);
    case coordinate_mode::asymmetric: return x / scale;
    case coordinate_mode::tf_half_pixel_for_nn: return (x + 0.5) / scale;
    case coordinate_mode::tf_crop_and_resize: {
      // roi is float: the reference (and onnxruntime) form its difference and the start offset
      // in float, which decides exact hits such as 1.0 that nearest rounding is sensitive to.
      constexpr double limit = std::numeric_limits<float>::max();
      const auto start = static_cast<float>(std::clamp(roi_start, -limit, limit));
      const float span = static_cast<float>(std::clamp(roi_end, -limit, limit)) - start;
      const float base = start * static_cast<float>(in - 1);
      if (length == 1) return static_cast<double>(span * static_cast<float>(in - 1) / 2.0f) + base;
      return x * static_cast<double>(span) * (n - 1) / (length - 1) + base;
    }
  }
  return x;
}

std::int64_t nearest_index(nearest_rule rule, double x, double scale) {
  if (rule == nearest_rule::legacy) {
    return static_cast<std::int64_t>(scale < 1 ? std::ceil(x) : std::trunc(x));
  }
  const double lower = std::floor(x);
  if (x == lower) return static_cast<std::int64_t>(x);
  const double ratio = x - lower;
  bool up = false;
  switch (rule) {
    case nearest_rule::round_prefer_floor: up = ratio > 0.5; break;
    case nearest_rule::round_prefer_ceil: up = ratio >= 0.5; break;
    case nearest_rule::floor: up = false; break;
    case nearest_rule::ceil: up = true; break;
    case nearest_rule::legacy: break;
  }
  return static_cast<std::int64_t>(lower) + (up ? 1 : 0);
}

/// Weights of the taps around a source coordinate with fractional part `ratio` in (0, 1].
std::vector<double> tap_weights(const resize_settings& s, double ratio, double scale) {
  // The cubic kernel is evaluated in float: cubic_coeff_a is a float attribute and both the
  // reference and onnxruntime compute with it in float. Near-zero outputs (where the taps
  // cancel) depend on that rounding beyond the 1e-3 relative tolerance.
  const auto a = static_cast<float>(s.cubic_a);
  auto near = [a](float x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };          // |x| <= 1
  auto far = [a](float x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };     // 1 < |x| < 2
  auto cubic = [&](double x) -> double {
    x = std::abs(x);
    const auto xf = static_cast<float>(x);
    const auto x2 = static_cast<float>(x * x);
    const auto x3 = static_cast<float>(x * x * x);
    if (x <= 1) return (a + 2) * x3 - (a + 3) * x2 + 1;
    if (x < 2) return a * x3 - 5 * a * x2 + 8 * a * xf - 4 * a;
    return 0.0;
  };
  std::vector<double> w;
  if (!s.antialias) {
    if (s.mode == resize_mode::linear) return {1 - ratio, ratio};
    return {far(static_cast<float>(ratio + 1)), near(static_cast<float>(ratio)), near(static_cast<float>(1 - ratio)),
            far(static_cast<float>(2 - ratio))};
  }
  // Antialiasing widens the filter by 1/scale when downsampling.
  const double sc = std::min(scale, 1.0);
  const double support = s.mode == resize_mode::linear ? 1.0 : 2.0;
  const auto first = static_cast<std::int64_t>(std::floor(-support / sc) + 1);
  const std::int64_t count = 2 - 2 * first;
  double total = 0;
  for (std::int64_t i = first; i < first + count; ++i) {
    const double arg = (static_cast<double>(i) - ratio) * sc;
    const double v = s.mode == resize_mode::linear ? std::clamp(1 - std::abs(arg), 0.0, 1.0) : cubic(arg);
    w.push_back(v);
    total += v;
  }
  for (double& v : w) v /= total;
  return w;
}

axis_plan plan_axis(const resize_settings& s, std::int64_t in, std::int64_t out, double scale, double roi_start,
                    double roi_end) {
  axis_plan p;
  p.in = in;
  p.out = out;
  const bool roi_identity = s.coordinates != coordinate_mode::tf_crop_and_resize ||
                            (std::abs(roi_start) < 1e-9 && std::abs(roi_end - 1) < 1e-9);
  p.identity = std::abs(scale - 1) <= 1e-9 && in == out && roi_identity;
  if (p.identity || out == 0) return p;
  p.extrapolated.assign(static_cast<std::size_t>(out), false);
  if (s.mode == resize_mode::nearest) p.nearest.resize(static_cast<std::size_t>(out));
  for (std::int64_t j = 0; j < out; ++j) {
    double x = source_coordinate(s, static_cast<double>(j), scale, in, out, roi_start, roi_end);
    const auto ju = static_cast<std::size_t>(j);
    if (s.coordinates == coordinate_mode::tf_crop_and_resize && !(x >= 0 && x <= static_cast<double>(in - 1))) {
      p.extrapolated[ju] = true;  // NaN (from a NaN roi) included
    }
    // Far outside the input every tap clamps to the edge anyway; bounding x keeps the integer
    // conversions below defined.
    x = std::isnan(x) ? 0.0 : std::clamp(x, -1e15, 1e15);
    if (s.mode == resize_mode::nearest) {
      p.nearest[ju] = std::clamp<std::int64_t>(nearest_index(s.rule, x, scale), 0, in - 1);
      continue;
    }
    const double lower = std::floor(x);
    const double ratio = x == lower ? 1.0 : x - lower;
    std::vector<double> w = tap_weights(s, ratio, scale);
    const auto n = static_cast<std::int64_t>(w.size());
    if (p.taps == 0) {
      p.taps = w.size();
      p.weights.resize(p.taps * static_cast<std::size_t>(out));
      p.index.resize(p.taps * static_cast<std::size_t>(out));
    }
    // The n taps nearest to x, ties to the lower index (the reference's window rule).
    const std::int64_t pad = (n + 1) / 2;
    const double padded = x + static_cast<double>(pad);
    const double floor_padded = std::floor(padded);
    const double frac = padded - floor_padded;
    std::int64_t offset;
    if (n % 2 == 0) {
      offset = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    } else {
      offset = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    }
    const std::int64_t start = static_cast<std::int64_t>(floor_padded) + offset - pad;
    if (s.exclude_outside) {
      double total = 0;
      for (std::int64_t t = 0; t < n; ++t) {
        if (start + t < 0 || start + t >= in) w[static_cast<std::size_t>(t)] = 0;
        total += w[static_cast<std::size_t>(t)];
      }
      if (total != 0) {
        for (double& v : w) v /= total;
      }
    }
    if (w.size() != p.taps) w.resize(p.taps, 0.0);  // the window width depends only on the scale
    std::copy(w.begin(), w.end(), p.weights.begin() + static_cast<std::ptrdiff_t>(ju * p.taps));
    for (std::size_t t = 0; t < p.taps; ++t) {
      p.index[ju * p.taps + t] = std::clamp<std::int64_t>(start + static_cast<std::int64_t>(t), 0, in - 1);
    }
  }
  return p;
}

/// Nearest: out[j...] = in[table[j]...] per axis, any element type.
void resize_nearest(kernel_context& ctx, const tensor& x, tensor& out, const std::vector<axis_plan>& plans,
                    const element_value& extrapolation) {
  const std::size_t rank = x.rank();
  const std::size_t width = element_width(ctx, x.dtype());
  const std::vector<std::int64_t> in_strides = detail::strides_of(x.shape());
  // Source offset of each output index per axis; -1 for extrapolated positions.
  std::vector<std::vector<std::int64_t>> offsets(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const axis_plan& p = plans[k];
    offsets[k].resize(static_cast<std::size_t>(out.dim(k)));
    for (std::int64_t j = 0; j < out.dim(k); ++j) {
      const auto ju = static_cast<std::size_t>(j);
      const bool outside = !p.identity && p.extrapolated[ju];
      offsets[k][ju] = outside ? -1 : (p.identity ? j : p.nearest[ju]) * in_strides[k];
    }
  }
  const shape_t& shape = out.shape();
  const std::int64_t cols = rank == 0 ? 1 : shape[rank - 1];
  const std::int64_t rows = cols == 0 ? 0 : out.element_count() / cols;
  const std::byte* src = bytes_of(x);
  std::byte* dst = mutable_bytes_of(out);
  dispatch_width(width, [&](auto tag) {
    using W = decltype(tag);
    const W fill_value = load<W>(extrapolation.bytes.data());
    detail::parallel_for(ctx.threads(), rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(cols, 1)), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t row = b; row < e; ++row) {
        std::int64_t rest = row;
        std::int64_t base = 0;
        bool outside = false;
        for (std::size_t k = rank - 1; k-- > 0;) {
          const std::int64_t o = offsets[k][static_cast<std::size_t>(rest % shape[k])];
          rest /= shape[k];
          outside = outside || o < 0;
          base += o;
        }
        std::byte* d = dst + row * cols * static_cast<std::int64_t>(sizeof(W));
        const std::vector<std::int64_t>& inner = offsets[rank - 1];
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::int64_t o = inner[static_cast<std::size_t>(j)];
          const W v = outside || o < 0 ? fill_value : load<W>(src + (base + o) * static_cast<std::int64_t>(sizeof(W)));
          store<W>(d + j * static_cast<std::int64_t>(sizeof(W)), v);
        }
      }
    });
  });
}

/// One separable pass along `axis` of one slice: `in` has shape `shape`, `result` gets
/// shape[axis] = p.out. Tap indices are pre-clamped into the input (edge padding).
void resample_axis(const std::vector<double>& in, const shape_t& shape, std::size_t axis, const axis_plan& p,
                   double extrapolation, std::vector<double>& result) {
  const std::int64_t outer = detail::product(shape, 0, axis);
  const std::int64_t inner = detail::product(shape, axis + 1);
  const std::size_t taps = p.taps;
  result.assign(static_cast<std::size_t>(outer * p.out * inner), 0.0);
  for (std::int64_t o = 0; o < outer; ++o) {
    const double* src = in.data() + o * p.in * inner;
    double* dst = result.data() + o * p.out * inner;
    for (std::int64_t j = 0; j < p.out; ++j) {
      double* d = dst + j * inner;
      const auto ju = static_cast<std::size_t>(j);
      if (p.extrapolated[ju]) {
        std::fill(d, d + inner, extrapolation);
        continue;
      }
      const double* w = p.weights.data() + ju * taps;
      const std::int64_t* idx = p.index.data() + ju * taps;
      if (inner == 1) {
        double sum = 0;
        for (std::size_t t = 0; t < taps; ++t) sum += w[t] * src[idx[t]];
        *d = sum;
        continue;
      }
      for (std::size_t t = 0; t < taps; ++t) {
        if (w[t] == 0) continue;
        const double* s = src + idx[t] * inner;
        for (std::int64_t i = 0; i < inner; ++i) d[i] += w[t] * s[i];
      }
    }
  }
}

template <class T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    v = std::nearbyint(v);
    if (std::isnan(v)) return T{0};
    return static_cast<T>(std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                                     static_cast<double>(std::numeric_limits<T>::max())));
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(static_cast<float>(v));
  }
}

/// Per output index of one axis, the two source indices and weights of its linear window; an
/// unchanged axis reads index j with weight 1. nullopt for wider windows or extrapolation.
struct two_tap_window {
  std::vector<std::int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;
};

std::optional<two_tap_window> two_taps(const axis_plan& p) {
  two_tap_window t;
  for (std::int64_t j = 0; j < p.out; ++j) {
    const auto ju = static_cast<std::size_t>(j);
    if (p.identity) {
      t.lo.push_back(j), t.hi.push_back(j), t.w_lo.push_back(1.0f), t.w_hi.push_back(0.0f);
      continue;
    }
    if (p.taps != 2 || p.extrapolated[ju]) return std::nullopt;
    t.lo.push_back(p.index[2 * ju]), t.hi.push_back(p.index[2 * ju + 1]);
    t.w_lo.push_back(static_cast<float>(p.weights[2 * ju])), t.w_hi.push_back(static_cast<float>(p.weights[2 * ju + 1]));
  }
  return t;
}

/// Input rows interpolated along the width, two held at a time: consecutive output rows read
/// mostly the rows the one before read.
class width_interpolated_rows {
 public:
  width_interpolated_rows(const float* src, std::int64_t in_width, const two_tap_window& cols)
      : src_(src), in_width_(in_width), cols_(cols), cache_(2 * cols.lo.size()) {}

  /// Input row `row` (counted over all slices) at the output width; `keep` (a row this
  /// returned before, or null) stays valid.
  const float* get(std::int64_t row, const float* keep) {
    const auto width = static_cast<std::int64_t>(cols_.lo.size());
    for (int slot = 0; slot < 2; ++slot) {
      if (held_[slot] == row) return cache_.data() + slot * width;
    }
    const int slot = keep == cache_.data() ? 1 : 0;
    float* out = cache_.data() + slot * width;
    const float* in = src_ + row * in_width_;
    for (std::size_t j = 0; j < cols_.lo.size(); ++j) out[j] = cols_.w_lo[j] * in[cols_.lo[j]] + cols_.w_hi[j] * in[cols_.hi[j]];
    held_[slot] = row;
    return out;
  }

 private:
  const float* src_;
  std::int64_t in_width_;
  const two_tap_window& cols_;
  std::vector<float> cache_;
  std::int64_t held_[2] = {-1, -1};
};

/// Float linear resizing of the last two axes (either may be unchanged), the upsampling of
/// segmentation and detection heads. It computes in float, as onnxruntime does, instead of
/// the double passes below: each output row blends two width-interpolated input rows. False
/// when the plans need the general path (other axes resized, cubic or antialiased windows,
/// extrapolation).
bool resize_bilinear_float(kernel_context& ctx, const tensor& x, tensor& out, const std::vector<axis_plan>& plans) {
  const std::size_t rank = x.rank();
  if (x.dtype() != data_type::float32 || rank < 2) return false;
  for (std::size_t k = 0; k + 2 < rank; ++k) {
    if (!plans[k].identity) return false;
  }
  const axis_plan& ph = plans[rank - 2];
  const axis_plan& pw = plans[rank - 1];
  const std::optional<two_tap_window> rows = two_taps(ph);
  const std::optional<two_tap_window> cols = two_taps(pw);
  if (!rows || !cols) return false;
  const std::int64_t slices = detail::product(x.shape(), 0, rank - 2);
  float* dst = typed_mutable<float>(out);
  const std::int64_t grain = std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(pw.out, 1));
  detail::parallel_for(ctx.threads(), slices * ph.out, grain, [&](std::int64_t begin, std::int64_t end) {
    width_interpolated_rows input(typed<float>(x), pw.in, *cols);
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t first_row = r / ph.out * ph.in;
      const auto j = static_cast<std::size_t>(r % ph.out);
      const float* a = input.get(first_row + rows->lo[j], nullptr);
      const float* b = input.get(first_row + rows->hi[j], a);
      const float wa = rows->w_lo[j], wb = rows->w_hi[j];
      float* d = dst + r * pw.out;
      for (std::int64_t k = 0; k < pw.out; ++k) d[k] = wa * a[k] + wb * b[k];
    }
  });
  return true;
}

// Dims before the first resized axis are independent slices: each is resampled on its own
// (in parallel), so the double buffers stay the size of one slice.
void resize_interpolated(kernel_context& ctx, const tensor& x, tensor& out, const std::vector<axis_plan>& plans,
                         const std::vector<std::size_t>& order, double extrapolation) {
  std::size_t first = plans.size();
  for (std::size_t a : order) {
    if (!plans[a].identity) first = std::min(first, a);
  }
  if (first == plans.size()) {  // nothing resized
    std::memcpy(out.mutable_raw(), x.raw(), x.byte_size());
    return;
  }
  const std::int64_t slices = detail::product(x.shape(), 0, first);
  const shape_t in_slice(x.shape().begin() + static_cast<std::ptrdiff_t>(first), x.shape().end());
  const std::int64_t in_size = detail::product(in_slice);
  const std::int64_t out_size = detail::product(out.shape(), first);
  dispatch_types(ctx, x.dtype(), numeric_types{}, [&](auto tag) {
    using T = decltype(tag);
    const T* src = typed<T>(x);
    T* dst = typed_mutable<T>(out);
    detail::parallel_for(ctx.threads(), slices, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<double> buffer, next;
      for (std::int64_t slice = begin; slice < end; ++slice) {
        const T* s = src + slice * in_size;
        buffer.resize(static_cast<std::size_t>(in_size));
        for (std::size_t k = 0; k < buffer.size(); ++k) buffer[k] = static_cast<double>(s[k]);
        shape_t shape = in_slice;
        for (std::size_t axis : order) {
          if (plans[axis].identity) continue;
          resample_axis(buffer, shape, axis - first, plans[axis], extrapolation, next);
          buffer.swap(next);
          shape[axis - first] = plans[axis].out;
        }
        T* d = dst + slice * out_size;
        for (std::int64_t k = 0; k < out_size; ++k) d[k] = from_double<T>(buffer[static_cast<std::size_t>(k)]);
      }
    });
  });
}

resize_mode parse_mode(const kernel_build_info& info, bool cubic_allowed) {
  const std::string mode = info.node.attr_string("mode", "nearest");
  if (mode == "nearest") return resize_mode::nearest;
  if (mode == "linear" || mode == "bilinear") return resize_mode::linear;
  if (mode == "cubic" && cubic_allowed) return resize_mode::cubic;
  info.fail("mode '" + mode + "' is not valid");
}

/// Where a resize kernel finds its inputs, by version.
struct resize_inputs {
  int roi = -1;
  int scales = -1;
  int sizes = -1;
};

class resize_kernel final : public kernel {
 public:
  /// Resize (opset >= 10) or Upsample (`upsample`).
  resize_kernel(const kernel_build_info& info, bool upsample) {
    const bool modern = !upsample && info.opset >= 11;
    s_.mode = parse_mode(info, modern);
    if (!modern) {
      s_.coordinates = coordinate_mode::asymmetric;
      s_.rule = nearest_rule::legacy;
      if (upsample && info.opset < 9) {
        if (!info.node.find_attribute("scales")) info.fail("attribute 'scales' is required before opset 9");
        for (float f : info.node.find_attribute("scales")->floats) attr_scales_.push_back(f);
      } else {
        inputs_.scales = 1;
      }
      return;
    }
    inputs_ = {1, 2, 3};
    const std::string coordinates = info.node.attr_string("coordinate_transformation_mode", "half_pixel");
    if (coordinates == "half_pixel") s_.coordinates = coordinate_mode::half_pixel;
    else if (coordinates == "half_pixel_symmetric" && info.opset >= 19) s_.coordinates = coordinate_mode::half_pixel_symmetric;
    else if (coordinates == "pytorch_half_pixel") s_.coordinates = coordinate_mode::pytorch_half_pixel;
    else if (coordinates == "align_corners") s_.coordinates = coordinate_mode::align_corners;
    else if (coordinates == "asymmetric") s_.coordinates = coordinate_mode::asymmetric;
    else if (coordinates == "tf_half_pixel_for_nn") s_.coordinates = coordinate_mode::tf_half_pixel_for_nn;
    else if (coordinates == "tf_crop_and_resize") s_.coordinates = coordinate_mode::tf_crop_and_resize;
    else info.fail("coordinate_transformation_mode '" + coordinates + "' is not valid");
    const std::string rule = info.node.attr_string("nearest_mode", "round_prefer_floor");
    if (rule == "round_prefer_floor") s_.rule = nearest_rule::round_prefer_floor;
    else if (rule == "round_prefer_ceil") s_.rule = nearest_rule::round_prefer_ceil;
    else if (rule == "floor") s_.rule = nearest_rule::floor;
    else if (rule == "ceil") s_.rule = nearest_rule::ceil;
    else info.fail("nearest_mode '" + rule + "' is not valid");
    s_.cubic_a = info.node.attr_float("cubic_coeff_a", -0.75f);
    s_.exclude_outside = info.node.attr_int("exclude_outside", 0) != 0;
    s_.extrapolation = info.node.attr_float("extrapolation_value", 0.0f);
    if (info.opset >= 18) {
      s_.antialias = info.node.attr_int("antialias", 0) != 0;
      if (s_.antialias && s_.mode == resize_mode::nearest) info.fail("antialias needs mode linear or cubic");
      const std::string policy = info.node.attr_string("keep_aspect_ratio_policy", "stretch");
      if (policy == "stretch") s_.policy = aspect_policy::stretch;
      else if (policy == "not_larger") s_.policy = aspect_policy::not_larger;
      else if (policy == "not_smaller") s_.policy = aspect_policy::not_smaller;
      else info.fail("keep_aspect_ratio_policy '" + policy + "' is not valid");
      if (info.node.find_attribute("axes")) {
        axes_ = info.node.attr_ints("axes", {});
        has_axes_ = true;
      }
    }
  }

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t rank = x.rank();
    std::vector<std::size_t> axes(rank);
    for (std::size_t k = 0; k < rank; ++k) axes[k] = k;
    if (has_axes_) axes = normalize_axes(ctx, axes_, rank);
    const geometry g = output_geometry(ctx, x, axes);
    const std::vector<double> roi = region_of_interest(ctx, axes, rank);
    tensor& out = ctx.allocate_output(0, x.dtype(), g.shape);
    if (out.element_count() == 0) return;
    std::vector<axis_plan> plans(rank);
    for (std::size_t k = 0; k < rank; ++k) plans[k] = plan_axis(s_, x.dim(k), g.shape[k], g.scales[k], roi[k], roi[rank + k]);
    if (s_.mode == resize_mode::nearest) {
      resize_nearest(ctx, x, out, plans, make_element(x.dtype(), s_.extrapolation));
    } else {
      if (x.dtype() == data_type::boolean) ctx.fail("linear and cubic modes do not take bool");
      if (!resize_bilinear_float(ctx, x, out, plans)) resize_interpolated(ctx, x, out, plans, axes, s_.extrapolation);
    }
  }

 private:
  struct geometry {
    std::vector<double> scales;  // per dim
    shape_t shape;               // the output's
  };

  /// Output shape and per-dim scales from the scales or sizes input (one of them, one entry
  /// per resized axis), with keep_aspect_ratio_policy applied to sizes.
  geometry output_geometry(const kernel_context& ctx, const tensor& x, const std::vector<std::size_t>& axes) const {
    std::vector<double> scales_in = attr_scales_;
    if (inputs_.scales >= 0 && ctx.has_input(static_cast<std::size_t>(inputs_.scales))) {
      scales_in = float_values(ctx, static_cast<std::size_t>(inputs_.scales), "scales");
    }
    std::vector<std::int64_t> sizes_in;
    if (inputs_.sizes >= 0 && ctx.has_input(static_cast<std::size_t>(inputs_.sizes))) {
      sizes_in = int_values(ctx, static_cast<std::size_t>(inputs_.sizes), "sizes");
    }
    if (!scales_in.empty() && !sizes_in.empty()) ctx.fail("has both scales and sizes");
    if (scales_in.empty() && sizes_in.empty()) ctx.fail("needs scales or sizes");
    const std::size_t given = scales_in.empty() ? sizes_in.size() : scales_in.size();
    if (given != axes.size()) {
      ctx.fail(std::string(scales_in.empty() ? "sizes" : "scales") + " has " + std::to_string(given) + " entries for " +
               std::to_string(axes.size()) + " axes of input shape " + to_string(x.shape()));
    }
    geometry g{std::vector<double>(x.rank(), 1.0), x.shape()};
    if (!scales_in.empty()) {
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const double sc = scales_in[k];
        if (!(sc > 0) || !std::isfinite(sc)) ctx.fail("scale " + std::to_string(sc) + " is not positive");
        const double size = std::floor(sc * static_cast<double>(x.dim(axes[k])));
        if (size > 1e15) ctx.fail("scale " + std::to_string(sc) + " gives a huge output");
        g.scales[axes[k]] = sc;
        g.shape[axes[k]] = static_cast<std::int64_t>(size);
      }
      return g;
    }
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const std::int64_t size = sizes_in[k], in = x.dim(axes[k]);
      if (size < 0) ctx.fail("sizes " + to_string(sizes_in) + " has a negative entry");
      if (in == 0 && size != 0) ctx.fail("cannot resize an empty dim to " + std::to_string(size));
      g.shape[axes[k]] = size;
      g.scales[axes[k]] = in == 0 ? 1.0 : static_cast<double>(size) / static_cast<double>(in);
    }
    if (s_.policy != aspect_policy::stretch && !axes.empty()) {
      double sc = g.scales[axes[0]];
      for (std::size_t a : axes) sc = s_.policy == aspect_policy::not_larger ? std::min(sc, g.scales[a]) : std::max(sc, g.scales[a]);
      for (std::size_t a : axes) {
        const double size = sc * static_cast<double>(x.dim(a)) + 0.5;  // round half up
        if (size > 1e15) ctx.fail("sizes " + to_string(sizes_in) + " give a huge output");
        g.scales[a] = sc;
        g.shape[a] = static_cast<std::int64_t>(size);
      }
    }
    return g;
  }

  /// [starts..., ends...] per dim; only tf_crop_and_resize reads the roi input.
  std::vector<double> region_of_interest(const kernel_context& ctx, const std::vector<std::size_t>& axes, std::size_t rank) const {
    std::vector<double> roi(2 * rank, 0.0);
    for (std::size_t k = 0; k < rank; ++k) roi[rank + k] = 1.0;
    if (s_.coordinates != coordinate_mode::tf_crop_and_resize) return roi;
    if (!ctx.has_input(static_cast<std::size_t>(inputs_.roi))) ctx.fail("tf_crop_and_resize needs roi");
    const std::vector<double> given = float_values(ctx, static_cast<std::size_t>(inputs_.roi), "roi");
    if (given.size() != 2 * axes.size()) ctx.fail("roi has " + std::to_string(given.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      roi[axes[k]] = given[k];
      roi[rank + axes[k]] = given[axes.size() + k];
    }
    return roi;
  }

  resize_settings s_;
  resize_inputs inputs_;
  std::vector<double> attr_scales_;
  bool has_axes_ = false;
  std::vector<std::int64_t> axes_;
};

}  // namespace

void register_resize_kernels(kernel_registry& r) {
  r.add("", "Resize", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<resize_kernel>(info, false);
  }, 10);
  r.add("", "Upsample", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<resize_kernel>(info, true);
  }, 7, 9);
}

}  // namespace inferopt::runtime::shape_detail
