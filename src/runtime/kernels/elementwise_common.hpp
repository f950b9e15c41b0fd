#pragma once
// The loops of the elementwise kernel family (elementwise_*.cpp, quantize.cpp): a contiguous
// map (Eigen arrays for transcendental float ops, plain loops the compiler vectorizes
// otherwise) and a broadcast map that collapses the output into rows along which every input
// is either contiguous or constant, so broadcasting runs the same inner loops as the
// same-shape case. Both split across ctx.threads() for large tensors. Also the generic unary
// and binary kernels, and registration helpers. Private to src/runtime/kernels.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "elementwise_types.hpp"
#include "kernel_util.hpp"

namespace inferopt::runtime::elementwise {

/// The last opset whose rules these kernels implement: opsets 22 to 24 only added element
/// types to the elementwise ops (bfloat16, float8, int4, float4), which a kernel refuses when
/// it does not hold them.
inline constexpr std::int64_t max_opset = 24;

/// Elements per thread below which a loop stays on one thread.
inline constexpr std::int64_t grain = std::int64_t{1} << 14;

// ---- contiguous map -----------------------------------------------------------------------

template <class T>
using array_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

/// Array forms run on blocks of at most this many elements: temporaries an op evaluates stay
/// in cache, and `block_array` keeps them off the heap.
inline constexpr std::int64_t block = 1024;
template <class T>
using block_array = Eigen::Array<T, Eigen::Dynamic, 1, Eigen::ColMajor, block, 1>;

/// An op with a whole-array form `op.array(x)` (an Eigen expression) for float and double.
template <class Op, class T>
concept array_op = requires(const Op& op, const array_map<T>& x) {
  op.array(x);
};

/// out[i] = Out::store(op(In::load(in[i]))) over contiguous buffers (in and out may be the
/// same tensor). Uses the op's Eigen array form when it has one, through a float block for
/// the 16-bit floats.
template <class In, class Out, class Op>
void unary_map(int threads, const tensor& in, tensor& out, const Op& op) {
  using S = typename In::storage;
  using D = typename Out::storage;
  using V = typename In::value;
  const S* src = in.data<S>();
  D* dst = out.mutable_data<D>();
  detail::parallel_for(threads, in.element_count(), grain, [&](std::int64_t lo, std::int64_t hi) {
    if constexpr (std::is_same_v<In, Out> && std::is_floating_point_v<V> && array_op<Op, V>) {
      using result_map = Eigen::Map<Eigen::Array<V, Eigen::Dynamic, 1>>;
      std::array<V, block> a;
      std::array<V, block> b;
      for (std::int64_t k = lo; k < hi; k += block) {
        const std::int64_t m = std::min(block, hi - k);
        if constexpr (std::is_same_v<S, V>) {
          result_map(dst + k, m) = op.array(array_map<V>(src + k, m));
        } else {
          for (std::int64_t i = 0; i < m; ++i) a[i] = In::load(src[k + i]);
          result_map(b.data(), m) = op.array(array_map<V>(a.data(), m));
          for (std::int64_t i = 0; i < m; ++i) dst[k + i] = Out::store(b[i]);
        }
      }
    } else if constexpr (std::is_same_v<Out, boolean> && std::is_same_v<S, float>) {
      // A float test into bytes: tested at the input's width, then narrowed, both of which
      // vectorize; in one loop the compiler left IsNaN scalar (2 ns an element).
      std::array<std::int32_t, block> t;
      for (std::int64_t k = lo; k < hi; k += block) {
        const std::int64_t m = std::min(block, hi - k);
        for (std::int64_t i = 0; i < m; ++i) t[i] = op(src[k + i]) ? 1 : 0;
        for (std::int64_t i = 0; i < m; ++i) dst[k + i] = static_cast<D>(t[i]);
      }
    } else {
      for (std::int64_t i = lo; i < hi; ++i) dst[i] = Out::store(op(In::load(src[i])));
    }
  });
}

// ---- broadcast map ------------------------------------------------------------------------

/// The output of a broadcast as `outer` rows of `inner` elements. Along a row, input i
/// advances by `inner_step[i]` (1: contiguous, 0: one value for the whole row); rows start at
/// the offsets a broadcast_walker over `outer_shape` with `outer_strides` gives.
struct broadcast_plan {
  shape_t outer_shape;
  std::vector<std::vector<std::int64_t>> outer_strides;  // one per input, rank of outer_shape
  std::int64_t inner = 1;
  std::vector<std::int64_t> inner_step;  // one per input: 0 or 1
};

/// Plans the broadcast of `inputs` to `out` (which must be their broadcast shape or larger):
/// dims of size 1 are dropped and trailing dims merged while every input stays contiguous
/// (or constant) across them.
inline broadcast_plan plan_broadcast(const shape_t& out, const std::vector<const shape_t*>& inputs) {
  const std::size_t n = inputs.size();
  std::vector<std::vector<std::int64_t>> strides;
  strides.reserve(n);
  for (const shape_t* s : inputs) strides.push_back(detail::broadcast_strides(*s, out));
  std::vector<std::size_t> kept;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] != 1) kept.push_back(k);
  }
  broadcast_plan p;
  p.inner_step.assign(n, 0);
  p.outer_strides.assign(n, {});
  if (kept.empty()) return p;
  std::size_t k = kept.size() - 1;
  p.inner = out[kept[k]];
  for (std::size_t i = 0; i < n; ++i) p.inner_step[i] = strides[i][kept[k]] != 0 ? 1 : 0;
  while (k > 0) {
    const std::size_t d = kept[k - 1];
    bool merge = true;
    for (std::size_t i = 0; i < n && merge; ++i) {
      merge = strides[i][d] == (p.inner_step[i] ? p.inner : 0);
    }
    if (!merge) break;
    p.inner *= out[d];
    --k;
  }
  for (std::size_t j = 0; j < k; ++j) {
    p.outer_shape.push_back(out[kept[j]]);
    for (std::size_t i = 0; i < n; ++i) p.outer_strides[i].push_back(strides[i][kept[j]]);
  }
  return p;
}

/// Calls fn(out_offset, input_offsets, count) for row segments covering [0, total) of a
/// planned broadcast; along a segment input i advances by plan.inner_step[i].
template <class Fn>
void for_each_segment(int threads, const broadcast_plan& p, std::int64_t total, Fn&& fn) {
  detail::parallel_for(threads, total, grain, [&](std::int64_t lo, std::int64_t hi) {
    detail::broadcast_walker walker(p.outer_shape, p.outer_strides);
    const std::size_t n = p.inner_step.size();
    std::array<std::int64_t, 4> offsets{};  // inputs: at most 4 (Where has 3)
    std::int64_t col = lo % p.inner;
    walker.seek(lo / p.inner);
    for (std::int64_t pos = lo; pos < hi;) {
      const std::int64_t len = std::min(p.inner - col, hi - pos);
      for (std::size_t i = 0; i < n; ++i) offsets[i] = walker.offsets()[i] + col * p.inner_step[i];
      fn(pos, offsets.data(), len);
      pos += len;
      col = 0;
      walker.next();
    }
  });
}

/// One row of a binary map; the four shapes of (contiguous | constant)^2 are separate loops
/// so each vectorizes.
template <class A, class B, class Out, class Op>
void binary_row(const typename A::storage* x, bool sx, const typename B::storage* y, bool sy, typename Out::storage* z,
                std::int64_t n, const Op& op) {
  if (sx && sy) {
    for (std::int64_t i = 0; i < n; ++i) z[i] = Out::store(op(A::load(x[i]), B::load(y[i])));
  } else if (sx) {
    const auto v = B::load(*y);
    for (std::int64_t i = 0; i < n; ++i) z[i] = Out::store(op(A::load(x[i]), v));
  } else if (sy) {
    const auto v = A::load(*x);
    for (std::int64_t i = 0; i < n; ++i) z[i] = Out::store(op(v, B::load(y[i])));
  } else {
    std::fill_n(z, n, Out::store(op(A::load(*x), B::load(*y))));
  }
}

/// out = op(a, b) with numpy broadcasting of a and b to out's shape (out may be a).
template <class A, class B, class Out, class Op>
void binary_map(int threads, const tensor& a, const tensor& b, tensor& out, const Op& op) {
  const std::int64_t total = out.element_count();
  if (total == 0) return;
  const auto* pa = a.data<typename A::storage>();
  const auto* pb = b.data<typename B::storage>();
  auto* po = out.mutable_data<typename Out::storage>();
  const broadcast_plan p = plan_broadcast(out.shape(), {&a.shape(), &b.shape()});
  for_each_segment(threads, p, total, [&](std::int64_t o, const std::int64_t* off, std::int64_t len) {
    binary_row<A, B, Out>(pa + off[0], p.inner_step[0] != 0, pb + off[1], p.inner_step[1] != 0, po + o, len, op);
  });
}

/// Broadcast shape of two tensors (fails naming the node when they do not broadcast).
inline shape_t broadcast_shape(const kernel_context& ctx, const tensor& a, const tensor& b) {
  return detail::broadcast_shapes(ctx, {&a.shape(), &b.shape()});
}

/// Registers a factory for a range of opsets of the default domain.
inline void add(kernel_registry& r, const char* op, kernel_factory f, std::int64_t since,
                std::int64_t until = max_opset) {
  r.add("", op, std::move(f), since, until);
}

/// A factory building `K` from the build info.
template <class K>
kernel_factory factory() {
  return [](const kernel_build_info& info) -> std::unique_ptr<kernel> { return std::make_unique<K>(info); };
}

/// Numpy broadcasting as opsets before 7 spelled it: without `broadcast=1` the shapes must
/// match; with it, B's dims line up with A's starting at `axis` (default: trailing).
class legacy_broadcast {
 public:
  legacy_broadcast() = default;
  explicit legacy_broadcast(const kernel_build_info& info)
      : active_(info.opset < 7),
        enabled_(info.node.attr_int("broadcast", 0) != 0),
        axis_(info.node.find_attribute("axis") ? info.node.attr_int("axis", 0) : no_axis) {}

  /// B viewed with numpy-broadcastable dims (itself from opset 7 on).
  [[nodiscard]] tensor apply(const kernel_context& ctx, const tensor& a, const tensor& b) const {
    if (!active_) return b;
    if (!enabled_) {
      if (a.shape() != b.shape()) {
        ctx.fail("shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                 " differ and attribute 'broadcast' is not set");
      }
      return b;
    }
    const auto rank_a = static_cast<std::int64_t>(a.rank());
    const auto rank_b = static_cast<std::int64_t>(b.rank());
    std::int64_t axis = axis_ == no_axis ? rank_a - rank_b : axis_;
    if (axis < 0) axis += rank_a;
    if (axis < 0 || axis + rank_b > rank_a) {
      ctx.fail("cannot broadcast " + to_string(b.shape()) + " to " + to_string(a.shape()) + " at axis " +
               std::to_string(axis));
    }
    shape_t s = b.shape();
    s.resize(static_cast<std::size_t>(rank_a - axis), 1);
    return b.reshaped(std::move(s));
  }

 private:
  static constexpr std::int64_t no_axis = INT64_MIN;
  bool active_ = false;
  bool enabled_ = false;
  std::int64_t axis_ = no_axis;
};

// ---- generic kernels ----------------------------------------------------------------------

/// An op built from the node (attributes read once) or default-constructed.
template <class Op>
Op make_op(const kernel_build_info& info) {
  if constexpr (std::is_constructible_v<Op, const kernel_build_info&>) {
    return Op(info);
  } else {
    (void)info;
    return Op{};
  }
}

/// y = op(x) for an input type in `List`; y has x's shape and type, or bool when `Predicate`.
template <class List, class Op, bool Predicate = false>
class unary_kernel final : public kernel {
 public:
  explicit unary_kernel(const kernel_build_info& info) : op_(make_op<Op>(info)) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    dispatch<List>(ctx, x.dtype(), [&](auto e) {
      using E = decltype(e);
      using Out = std::conditional_t<Predicate, boolean, E>;
      tensor& y = ctx.allocate_output(0, Out::type, x.shape());
      unary_map<E, Out>(ctx.threads(), x, y, op_);
    });
  }

 private:
  Op op_;
};

/// y = op(a, b) with numpy broadcasting (legacy broadcasting before opset 7) for inputs of one
/// type in `List`; y has that type, or bool when `Predicate`. An op with a `check(ctx, b)`
/// member validates the second input first (integer division by zero).
template <class List, class Op, bool Predicate = false>
class binary_kernel final : public kernel {
 public:
  explicit binary_kernel(const kernel_build_info& info) : op_(make_op<Op>(info)), legacy_(info) {}
  void compute(kernel_context& ctx) override {
    const tensor& a = ctx.input(0);
    const tensor b = legacy_.apply(ctx, a, ctx.input(1));
    if (a.dtype() != b.dtype()) {
      ctx.fail("input types differ: " + std::string(ir::to_string(a.dtype())) + " and " +
               std::string(ir::to_string(b.dtype())));
    }
    const shape_t shape = broadcast_shape(ctx, a, b);
    dispatch<List>(ctx, a.dtype(), [&](auto e) {
      using E = decltype(e);
      using Out = std::conditional_t<Predicate, boolean, E>;
      if constexpr (requires { op_.template check<E>(ctx, b); }) op_.template check<E>(ctx, b);
      tensor& y = ctx.allocate_output(0, Out::type, shape);
      binary_map<E, E, Out>(ctx.threads(), a, b, y, op_);
    });
  }

 private:
  Op op_;
  legacy_broadcast legacy_;
};

// ---- registration of the family's files ----------------------------------------------------

void register_activation_kernels(kernel_registry& r);
void register_math_kernels(kernel_registry& r);
void register_arithmetic_kernels(kernel_registry& r);
void register_logic_kernels(kernel_registry& r);
void register_cast_kernels(kernel_registry& r);

}  // namespace inferopt::runtime::elementwise
