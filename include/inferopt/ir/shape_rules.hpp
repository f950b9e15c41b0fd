#pragma once
/// The shape of each op's output, one formula per op for both users of it.
///
/// The executor computes output shapes from the tensors it has (`Dim = std::int64_t`); shape
/// inference computes them ahead of time from what the model declares (`Dim = sym_dim`,
/// where a dim may be `batch` or `sequence+1` or unknown). Both call these templates, so a
/// rule is written once. With numbers a rule throws on a contradiction; with symbols it
/// throws only when two numbers contradict, and otherwise keeps what it can tell.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/symbolic_dim.hpp"

namespace inferopt::ir::shape_rules {

template <class Dim>
inline constexpr bool is_numeric_v = std::is_same_v<Dim, std::int64_t>;

template <class Dim>
[[nodiscard]] std::string dim_text(const Dim& d) {
  if constexpr (is_numeric_v<Dim>) return std::to_string(d);
  else return d.str();
}

template <class Dim>
[[nodiscard]] std::string shape_text(std::span<const Dim> s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + dim_text(s[i]);
  return out;
}

[[noreturn]] inline void contradiction(const std::string& what) { throw error(errc::invalid_model, what); }

/// An axis in [-rank, rank) as a position in [0, rank).
[[nodiscard]] inline std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank) {
    contradiction(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

/// The dimension two broadcast operands agree on (numpy rules).
template <class Dim>
[[nodiscard]] Dim broadcast_dim(const Dim& x, const Dim& y) {
  const auto cx = constant_of(x), cy = constant_of(y);
  if (cx == 1) return y;
  if (cy == 1) return x;
  if (x == y) return x;
  if (cx && cy) contradiction("dimensions " + dim_text(x) + " and " + dim_text(y) + " do not broadcast");
  if constexpr (!is_numeric_v<Dim>) {
    // One side unknown or symbolic: a valid model makes it 1 or the other side, so a
    // number other than 1 on either side is the answer.
    if (cx || !y.known()) return x;
    if (cy || !x.known()) return y;
  }
  return Dim{};
}

template <class Dim>
[[nodiscard]] std::vector<Dim> broadcast(std::span<const Dim> a, std::span<const Dim> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const Dim one{1};
    const Dim& x = i + a.size() >= rank ? a[i + a.size() - rank] : one;
    const Dim& y = i + b.size() >= rank ? b[i + b.size() - rank] : one;
    out[i] = broadcast_dim(x, y);
  }
  return out;
}

/// Product of dims (element count); unknown when any is.
template <class Dim>
[[nodiscard]] Dim product(std::span<const Dim> s, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  Dim p{1};
  for (std::size_t i = from; i < s.size() && i < to; ++i) p = p * s[i];
  return p;
}

/// Output size of a sliding window (Conv, pools) with explicit pads. Pools with ceil_mode
/// drop a last window that would start in the end padding.
template <class Dim>
[[nodiscard]] Dim window_output_dim(const Dim& in, std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                                    std::int64_t pad_begin, std::int64_t pad_end, bool ceil_mode = false) {
  if (stride <= 0 || dilation <= 0 || kernel <= 0) {
    contradiction("kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride) + " and dilation " +
                  std::to_string(dilation) + " must be positive");
  }
  // Below 2^31 each, the window arithmetic cannot overflow (a hostile pad of INT64_MIN would).
  constexpr std::int64_t limit = std::int64_t{1} << 31;
  if (pad_begin < 0 || pad_end < 0 || pad_begin >= limit || pad_end >= limit || kernel >= limit || stride >= limit ||
      dilation >= limit) {
    contradiction("pads " + std::to_string(pad_begin) + ", " + std::to_string(pad_end) + ", kernel " +
                  std::to_string(kernel) + ", stride and dilation must lie in [0, 2^31)");
  }
  const Dim span = in + Dim{pad_begin + pad_end - dilation * (kernel - 1) - 1};
  if (const auto s = constant_of(span); s && *s < 0) {
    contradiction("window " + std::to_string(dilation * (kernel - 1) + 1) + " is larger than the padded input " +
                  dim_text(Dim{in + Dim{pad_begin + pad_end}}));
  }
  Dim out = (ceil_mode ? ceil_div(span, Dim{stride}) : floor_div(span, Dim{stride})) + Dim{1};
  if (ceil_mode) {
    if (const auto o = constant_of(out), i = constant_of(in); o && i && (*o - 1) * stride >= *i + pad_begin) out = Dim{*o - 1};
  }
  return out;
}

/// Output size under auto_pad SAME_UPPER / SAME_LOWER: ceil(in / stride).
template <class Dim>
[[nodiscard]] Dim same_padded_dim(const Dim& in, std::int64_t stride) {
  if (stride <= 0) contradiction("stride " + std::to_string(stride) + " must be positive");
  return ceil_div(in, Dim{stride});
}

/// ConvTranspose's output size without output_shape.
template <class Dim>
[[nodiscard]] Dim transposed_window_output_dim(const Dim& in, std::int64_t kernel, std::int64_t stride,
                                               std::int64_t dilation, std::int64_t pad_begin, std::int64_t pad_end,
                                               std::int64_t output_padding) {
  if (stride <= 0 || dilation <= 0 || kernel <= 0) contradiction("kernel, stride and dilation must be positive");
  return Dim{stride} * (in - Dim{1}) + Dim{output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end};
}

/// Inner dimensions of a product must agree.
template <class Dim>
void expect_same(const Dim& x, const Dim& y, const char* what) {
  const auto cx = constant_of(x), cy = constant_of(y);
  if (cx && cy && *cx != *cy) contradiction(std::string(what) + ": " + dim_text(x) + " vs " + dim_text(y));
}

/// numpy matmul: 1-D operands are promoted and their axis removed again; batch dims broadcast.
template <class Dim>
[[nodiscard]] std::vector<Dim> matmul_shape(std::span<const Dim> a, std::span<const Dim> b) {
  if (a.empty() || b.empty()) contradiction("MatMul operands must have rank 1 or more");
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  const Dim& k_a = a.back();
  const Dim& k_b = b_vector ? b[0] : b[b.size() - 2];
  expect_same(k_a, k_b, "inner dimensions differ");
  std::vector<Dim> out = broadcast(a.first(a_vector ? 0 : a.size() - 2), b.first(b_vector ? 0 : b.size() - 2));
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return out;
}

/// Gemm: (M x K) * (K x N), either side transposed.
template <class Dim>
[[nodiscard]] std::vector<Dim> gemm_shape(std::span<const Dim> a, std::span<const Dim> b, bool trans_a, bool trans_b) {
  if (a.size() != 2 || b.size() != 2) contradiction("Gemm operands must be matrices");
  expect_same(a[trans_a ? 0 : 1], b[trans_b ? 1 : 0], "inner dimensions differ");
  return {a[trans_a ? 1 : 0], b[trans_b ? 0 : 1]};
}

/// Reshape's target with 0 (copy the input's dim, unless allowzero) and one -1 (inferred).
template <class Dim>
[[nodiscard]] std::vector<Dim> reshape_shape(std::span<const Dim> in, std::span<const Dim> target, bool allowzero) {
  std::vector<Dim> out(target.begin(), target.end());
  std::ptrdiff_t inferred = -1;
  bool has_zero = false;
  Dim known{1};
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = constant_of(out[i]);
    has_zero = has_zero || c == 0;
    if (c == -1) {
      if (inferred >= 0) contradiction("shape has more than one -1");
      inferred = static_cast<std::ptrdiff_t>(i);
      continue;
    }
    if (c == 0 && !allowzero) {
      if (i >= in.size()) contradiction("shape copies dim " + std::to_string(i) + " the input does not have");
      out[i] = in[i];
    } else if (c && *c < -1) {
      contradiction("shape " + shape_text<Dim>(target) + " has a negative dim");
    }
    known = known * out[i];
  }
  const Dim total = product(in);
  if (inferred >= 0) {
    if (allowzero && has_zero) contradiction("shape " + shape_text<Dim>(target) + " has both 0 and -1 with allowzero set");
    if (constant_of(known) == 0) contradiction("shape " + shape_text<Dim>(target) + ": the -1 dim cannot be inferred beside a zero dim");
    if (const auto t = constant_of(total), k = constant_of(known); t && k && *t % *k != 0) {
      contradiction("cannot reshape " + shape_text(in) + " to " + shape_text<Dim>(target) + ": the -1 dim cannot be inferred");
    }
    out[inferred] = floor_div(total, known);
  } else if (const auto t = constant_of(total), k = constant_of(known); t && k && *t != *k) {
    contradiction("cannot reshape " + shape_text(in) + " (" + std::to_string(*t) + " elements) to " +
                  shape_text<Dim>(out));
  }
  return out;
}

template <class Dim>
[[nodiscard]] std::vector<Dim> flatten_shape(std::span<const Dim> in, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(in.size());
  if (axis < -rank || axis > rank) contradiction("axis " + std::to_string(axis) + " is out of range");
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  return {product(in, 0, a), product(in, a)};
}

template <class Dim>
[[nodiscard]] std::vector<Dim> transpose_shape(std::span<const Dim> in, std::span<const std::int64_t> perm) {
  std::vector<Dim> out;
  if (perm.empty()) return {in.rbegin(), in.rend()};
  if (perm.size() != in.size()) contradiction("perm has " + std::to_string(perm.size()) + " axes for rank " + std::to_string(in.size()));
  std::vector<bool> seen(in.size());
  for (std::int64_t p : perm) {
    const std::int64_t a = normalize_axis(p, static_cast<std::int64_t>(in.size()), "perm axis");
    if (seen[a]) contradiction("perm repeats axis " + std::to_string(p));
    seen[a] = true;
    out.push_back(in[a]);
  }
  return out;
}

/// Concat along `axis`: other dims must agree.
template <class Dim>
[[nodiscard]] std::vector<Dim> concat_shape(std::span<const std::vector<Dim>> parts, std::int64_t axis) {
  if (parts.empty()) contradiction("Concat needs an input");
  std::vector<Dim> out = parts[0];
  const std::int64_t a = normalize_axis(axis, static_cast<std::int64_t>(out.size()));
  for (std::size_t p = 1; p < parts.size(); ++p) {
    auto mismatch = [&] {
      contradiction("input " + std::to_string(p) + " has shape " + shape_text<Dim>(parts[p]) + ", which does not match " +
                    shape_text<Dim>(parts[0]) + " outside axis " + std::to_string(a));
    };
    if (parts[p].size() != out.size()) mismatch();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (static_cast<std::int64_t>(i) == a) {
        out[i] = out[i] + parts[p][i];
        continue;
      }
      const auto x = constant_of(out[i]), y = constant_of(parts[p][i]);
      if (x && y && *x != *y) mismatch();
      if (!x && y) out[i] = parts[p][i];
    }
  }
  return out;
}

/// Squeeze: the listed axes (or every 1 when none are listed) removed.
template <class Dim>
[[nodiscard]] std::vector<Dim> squeeze_shape(std::span<const Dim> in, std::span<const std::int64_t> axes) {
  const auto rank = static_cast<std::int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!constant_of(in[i])) contradiction("Squeeze without axes on a dim of unknown size");
      drop[i] = constant_of(in[i]) == 1;
    }
  }
  for (std::int64_t axis : axes) {
    const std::int64_t a = normalize_axis(axis, rank);
    if (const auto c = constant_of(in[a]); c && *c != 1) contradiction("cannot squeeze axis " + std::to_string(axis) + " of size " + std::to_string(*c));
    drop[a] = true;
  }
  std::vector<Dim> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return out;
}

template <class Dim>
[[nodiscard]] std::vector<Dim> unsqueeze_shape(std::span<const Dim> in, std::span<const std::int64_t> axes) {
  const auto rank = static_cast<std::int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (std::int64_t axis : axes) {
    const std::int64_t a = normalize_axis(axis, rank);
    if (inserted[a]) contradiction("axes repeat " + std::to_string(axis));
    inserted[a] = true;
  }
  std::vector<Dim> out;
  std::size_t next = 0;
  for (std::int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? Dim{1} : in[next++]);
  return out;
}

/// One sliced axis after numpy-style clamping: `count` elements from `start` by `step`.
struct axis_slice {
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::int64_t count = 0;
};

// Clamping follows the spec (and onnxruntime): after adding the dim to negative values, a
// start is clamped to [0, dim] for positive steps and [0, dim-1] for negative ones, an end to
// [0, dim] or [-1, dim-1]. Out-of-range values thus behave as in numpy, except for a start
// below -dim with a negative step: numpy (and the Python reference evaluator) gives an empty
// slice there, the spec starts at element 0.
inline axis_slice clamp_slice(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t dim) {
  axis_slice s;
  if (dim == 0) return s;
  // A step longer than the dim takes at most one element; bounding it keeps the arithmetic
  // below (and the stride products) clear of overflow.
  step = std::clamp(step, -(dim + 1), dim + 1);
  start = start < 0 ? start + dim : start;
  end = end < 0 ? end + dim : end;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    s.count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<std::int64_t>(start, 0, dim - 1);
    end = std::clamp<std::int64_t>(end, -1, dim - 1);
    s.count = start > end ? (start - end - 1) / -step + 1 : 0;
  }
  s.start = start;
  s.step = step;
  return s;
}

/// Elements a Slice keeps along one axis: with numbers, `clamp_slice`'s count. With a symbolic
/// dim or bound, bounds are taken to lie inside the dim (as in any model that runs).
template <class Dim>
[[nodiscard]] Dim slice_dim(const Dim& d, const Dim& start, const Dim& end, std::int64_t step) {
  if (step == 0) contradiction("Slice step is 0");
  const auto n = constant_of(d), s = constant_of(start), e = constant_of(end);
  if (n && s && e) return Dim{clamp_slice(*s, *e, step, *n).count};
  if constexpr (is_numeric_v<Dim>) {
    return Dim{};
  } else {
    if (step < 0) return Dim{};
    auto bound = [&](const Dim& v) {
      const auto c = constant_of(v);
      if (c && *c >= INT32_MAX) return d;
      return c && *c < 0 ? d + v : v;
    };
    return ceil_div(bound(end) - bound(start), Dim{step});
  }
}

/// Gather: data's dims with `axis` replaced by the indices' dims.
template <class Dim>
[[nodiscard]] std::vector<Dim> gather_shape(std::span<const Dim> data, std::span<const Dim> indices, std::int64_t axis) {
  const std::int64_t a = normalize_axis(axis, static_cast<std::int64_t>(data.size()));
  std::vector<Dim> out(data.begin(), data.begin() + a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + a + 1, data.end());
  return out;
}

/// Reductions: listed axes (every axis when none, unless noop_with_empty_axes) become 1 or go.
template <class Dim>
[[nodiscard]] std::vector<Dim> reduce_shape(std::span<const Dim> in, std::span<const std::int64_t> axes, bool keepdims,
                                            bool noop_with_empty_axes = false) {
  if (axes.empty() && noop_with_empty_axes) return {in.begin(), in.end()};
  std::vector<bool> reduced(in.size(), axes.empty());
  for (std::int64_t axis : axes) reduced[normalize_axis(axis, static_cast<std::int64_t>(in.size()))] = true;
  std::vector<Dim> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (keepdims) out.push_back(Dim{1});
  }
  return out;
}

/// Tile: each dim times its repeat count.
template <class Dim>
[[nodiscard]] std::vector<Dim> tile_shape(std::span<const Dim> in, std::span<const Dim> repeats) {
  if (repeats.size() != in.size()) contradiction("Tile has " + std::to_string(repeats.size()) + " repeats for rank " + std::to_string(in.size()));
  std::vector<Dim> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (const auto r = constant_of(repeats[i]); r && *r < 0) contradiction("Tile repeat is negative");
    out.push_back(in[i] * repeats[i]);
  }
  return out;
}

/// Pad: `pads` holds all begins then all ends, for the listed axes (all when empty).
template <class Dim>
[[nodiscard]] std::vector<Dim> pad_shape(std::span<const Dim> in, std::span<const std::int64_t> pads,
                                         std::span<const std::int64_t> axes = {}) {
  const auto rank = static_cast<std::int64_t>(in.size());
  std::vector<std::int64_t> order;
  for (std::int64_t a : axes) order.push_back(normalize_axis(a, rank));
  if (axes.empty()) {
    for (std::int64_t a = 0; a < rank; ++a) order.push_back(a);
  }
  if (pads.size() != 2 * order.size()) contradiction("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(order.size()) + " axes");
  std::vector<Dim> out(in.begin(), in.end());
  constexpr std::int64_t largest_pad = std::int64_t{1} << 40;  // keeps every sum below overflow
  for (std::int64_t p : pads) {
    if (p > largest_pad || p < -largest_pad) contradiction("pad " + std::to_string(p) + " is beyond any tensor's size");
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    out[order[k]] = out[order[k]] + Dim{pads[k] + pads[k + order.size()]};
    if (const auto c = constant_of(out[order[k]]); c && *c < 0) contradiction("pads make a dim negative");
  }
  return out;
}

/// DepthToSpace (blocksize b): C/(b*b), H*b, W*b; SpaceToDepth the inverse.
template <class Dim>
[[nodiscard]] std::vector<Dim> depth_to_space_shape(std::span<const Dim> in, std::int64_t block, bool to_space) {
  if (in.size() != 4) contradiction("input must have rank 4");
  if (block <= 0) contradiction("blocksize must be positive");
  const Dim b{block}, bb{block * block};
  if (to_space) {
    if (const auto c = constant_of(in[1]); c && *c % (block * block) != 0) contradiction("channels do not divide by blocksize^2");
    return {in[0], floor_div(in[1], bb), in[2] * b, in[3] * b};
  }
  for (int i = 2; i < 4; ++i) {
    if (const auto c = constant_of(in[i]); c && *c % block != 0) contradiction("spatial dims do not divide by blocksize");
  }
  return {in[0], in[1] * bb, floor_div(in[2], b), floor_div(in[3], b)};
}

}  // namespace inferopt::ir::shape_rules
