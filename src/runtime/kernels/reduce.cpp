// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare and ArgMax/ArgMin.
//
// Strategy: reduced and kept dims are merged into alternating runs, so any reduction is a
// walk over input rows whose innermost run is either reduced (a row folds into one
// accumulator) or kept (a row adds element-wise into a run of accumulators). Accumulators are
// double for floating types (float16 included) and 64-bit for integers, so sums of int64
// stay exact; results are rounded once into the input type. Work is split across threads
// along the outermost run when it is kept, so threads never share an accumulator.
// With empty axes and noop_with_empty_axes=1 nothing is reduced and each output applies the
// op to one element, as the ONNX reference does (ReduceSumSquare gives x^2).

#include <algorithm>
#include <cmath>
#include <limits>

#include "elementwise_types.hpp"
#include "shape_common.hpp"

namespace inferopt::runtime {
namespace shape_detail {
namespace {

enum class reduce_op { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

/// A merged run of dims: its size and whether it is reduced.
struct run {
  std::int64_t size;
  bool reduced;
};

/// The reduction layout of an input: merged runs and the output's strides per run.
struct reduce_layout {
  std::vector<run> runs;
  std::vector<std::int64_t> out_strides;  // 0 for reduced runs
  std::int64_t reduced_count = 1;         // elements folded into each output
};

reduce_layout make_layout(const shape_t& shape, const std::vector<bool>& reduced) {
  reduce_layout l;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (reduced[k]) l.reduced_count *= shape[k];
    if (shape[k] == 1) continue;
    if (!l.runs.empty() && l.runs.back().reduced == reduced[k]) {
      l.runs.back().size *= shape[k];
    } else {
      l.runs.push_back({shape[k], static_cast<bool>(reduced[k])});
    }
  }
  l.out_strides.assign(l.runs.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t k = l.runs.size(); k-- > 0;) {
    if (l.runs[k].reduced) continue;
    l.out_strides[k] = stride;
    stride *= l.runs[k].size;
  }
  return l;
}

/// Calls fold(acc_index, row_ptr, row_len, reduced_row) for each input row. Rows of one
/// thread touch accumulators no other thread touches.
template <class T, class Fold>
void walk_rows(const reduce_layout& l, const T* x, int threads, Fold&& fold) {
  for (const run& r : l.runs) {
    if (r.size == 0) return;  // nothing to fold: outputs keep their initial values
  }
  if (l.runs.empty()) {
    fold(std::int64_t{0}, x, std::int64_t{1}, true);
    return;
  }
  const std::size_t rank = l.runs.size();
  const std::int64_t inner = l.runs.back().size;
  const bool inner_reduced = l.runs.back().reduced;
  auto walk = [&](std::int64_t first_begin, std::int64_t first_end) {
    // Rows are indexed by runs [0, rank-1); run 0 is limited to [first_begin, first_end).
    std::int64_t rows_per_first = 1;
    for (std::size_t k = 1; k + 1 < rank; ++k) rows_per_first *= l.runs[k].size;
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t f = first_begin; f < first_end; ++f) {
      std::int64_t out = rank > 1 ? f * l.out_strides[0] : 0;
      const T* row = x + (rank > 1 ? f * rows_per_first * inner : 0);
      std::fill(index.begin(), index.end(), 0);
      for (std::int64_t r = 0; r < rows_per_first; ++r, row += inner) {
        fold(out, row, inner, inner_reduced);
        for (std::size_t k = rank - 1; k-- > 1;) {
          ++index[k];
          out += l.out_strides[k];
          if (index[k] < l.runs[k].size) break;
          out -= l.out_strides[k] * l.runs[k].size;
          index[k] = 0;
        }
      }
    }
  };
  if (rank == 1) {
    walk(0, 1);
  } else if (!l.runs[0].reduced) {
    const std::int64_t per_first = [&] {
      std::int64_t n = 1;
      for (std::size_t k = 1; k < rank; ++k) n *= l.runs[k].size;
      return n;
    }();
    detail::parallel_for(threads, l.runs[0].size, std::max<std::int64_t>(1, 32768 / per_first), walk);
  } else {
    walk(0, l.runs[0].size);
  }
}

template <class A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

template <class T>
T to_output(double v) {
  if constexpr (std::is_integral_v<T>) {
    return elementwise::float_to_integer<T>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(static_cast<float>(v));
  }
}

/// Reduces `x` into `out` with accumulators of type A (an integer type only for ops whose
/// result is exact in integers: sum, prod, max, min, l1, sum_square).
template <class T, class A>
void reduce_typed(reduce_op op, const reduce_layout& l, const tensor& x, tensor& out, int threads) {
  const T* src = typed<T>(x);
  const std::int64_t n_out = out.element_count();
  A init = 0;
  if (op == reduce_op::prod) init = 1;
  if constexpr (std::is_integral_v<T>) {
    if (op == reduce_op::max) init = static_cast<A>(std::numeric_limits<T>::lowest());
    if (op == reduce_op::min) init = static_cast<A>(std::numeric_limits<T>::max());
  } else {
    if (op == reduce_op::max) init = -std::numeric_limits<A>::infinity();
    if (op == reduce_op::min) init = std::numeric_limits<A>::infinity();
  }
  std::vector<A> acc(static_cast<std::size_t>(n_out), init);

  // LogSumExp folds exp(x - max) after a max pass, so large inputs do not overflow.
  std::vector<double> shift;
  if (op == reduce_op::log_sum_exp) {
    shift.assign(acc.size(), -std::numeric_limits<double>::infinity());
    walk_rows<T>(l, src, threads, [&](std::int64_t o, const T* row, std::int64_t len, bool folded) {
      for (std::int64_t i = 0; i < len; ++i) {
        double& m = shift[static_cast<std::size_t>(folded ? o : o + i)];
        m = std::max(m, static_cast<double>(row[i]));
      }
    });
    for (double& m : shift) {
      if (!std::isfinite(m)) m = 0;
    }
  }

  auto element = [&](A a, A v, std::int64_t o) -> A {
    switch (op) {
      case reduce_op::sum:
      case reduce_op::mean:
      case reduce_op::log_sum: return a + v;
      case reduce_op::l1: return a + (v < 0 ? static_cast<A>(0 - v) : v);
      case reduce_op::l2:
      case reduce_op::sum_square: return a + v * v;
      case reduce_op::prod: return a * v;
      case reduce_op::max: return (v > a || is_nan(v)) && !is_nan(a) ? v : a;
      case reduce_op::min: return (v < a || is_nan(v)) && !is_nan(a) ? v : a;
      case reduce_op::log_sum_exp:
        if constexpr (std::is_floating_point_v<A>) return a + std::exp(v - shift[static_cast<std::size_t>(o)]);
        break;
    }
    return a;
  };
  walk_rows<T>(l, src, threads, [&](std::int64_t o, const T* row, std::int64_t len, bool folded) {
    if (folded) {
      A a = acc[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < len; ++i) a = element(a, static_cast<A>(row[i]), o);
      acc[static_cast<std::size_t>(o)] = a;
    } else {
      for (std::int64_t i = 0; i < len; ++i) {
        A& a = acc[static_cast<std::size_t>(o + i)];
        a = element(a, static_cast<A>(row[i]), o + i);
      }
    }
  });

  T* dst = typed_mutable<T>(out);
  const auto count = static_cast<double>(l.reduced_count);
  for (std::int64_t k = 0; k < n_out; ++k) {
    const A a = acc[static_cast<std::size_t>(k)];
    if constexpr (std::is_integral_v<A>) {
      dst[k] = static_cast<T>(a);  // exact; wraps like the element type
      continue;
    } else {
      double v = static_cast<double>(a);
      switch (op) {
        case reduce_op::mean: v = l.reduced_count == 0 && std::is_integral_v<T> ? 0.0 : v / count; break;
        case reduce_op::l2: v = std::sqrt(v); break;
        case reduce_op::log_sum: v = std::log(v); break;
        case reduce_op::log_sum_exp: v = std::log(v) + shift[static_cast<std::size_t>(k)]; break;
        default: break;
      }
      dst[k] = to_output<T>(v);
    }
  }
}

/// Integer inputs keep exact 64-bit accumulators where the result is an integer anyway.
template <class T>
void reduce_any(reduce_op op, const reduce_layout& l, const tensor& x, tensor& out, int threads) {
  if constexpr (std::is_integral_v<T>) {
    using I = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    switch (op) {
      case reduce_op::sum:
      case reduce_op::prod:
      case reduce_op::max:
      case reduce_op::min:
      case reduce_op::l1:
      case reduce_op::sum_square: reduce_typed<T, I>(op, l, x, out, threads); return;
      default: break;
    }
  }
  reduce_typed<T, double>(op, l, x, out, threads);
}

using reduce_types = type_list<float, double, half_t, bfloat16_t, std::int8_t, std::uint8_t, std::int16_t, std::uint16_t,
                               std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;

class reduce_kernel final : public kernel {
 public:
  reduce_kernel(const kernel_build_info& info, reduce_op op, std::int64_t axes_input_since)
      : op_(op),
        keep_dims_(info.node.attr_int("keepdims", 1) != 0),
        noop_with_empty_axes_(info.node.attr_int("noop_with_empty_axes", 0) != 0),
        axes_from_input_(info.opset >= axes_input_since) {
    if (!axes_from_input_) axes_ = info.node.attr_ints("axes", {});
  }
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    std::vector<std::int64_t> axes = axes_;
    if (axes_from_input_ && ctx.has_input(1)) axes = int_values(ctx, 1, "axes");
    std::vector<bool> reduced(x.rank(), false);
    if (axes.empty()) {
      if (!noop_with_empty_axes_) std::fill(reduced.begin(), reduced.end(), true);
    } else {
      for (std::size_t k : normalize_axes(ctx, axes, x.rank())) reduced[k] = true;
    }
    const shape_t out_shape = ir::shape_rules::reduce_shape<std::int64_t>(x.shape(), axes, keep_dims_, noop_with_empty_axes_);
    const reduce_layout layout = make_layout(x.shape(), reduced);
    tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    if (out.element_count() == 0) return;
    if (x.dtype() == data_type::boolean && (op_ == reduce_op::max || op_ == reduce_op::min)) {
      reduce_any<std::uint8_t>(op_, layout, x, out, ctx.threads());
      return;
    }
    dispatch_types(ctx, x.dtype(), reduce_types{}, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) {
        reduce_half<T>(layout, x, out, ctx.threads());
      } else {
        reduce_any<T>(op_, layout, x, out, ctx.threads());
      }
    });
  }

 private:
  // 16-bit floats are widened to float once, reduced, and rounded back.
  template <class H>
  void reduce_half(const reduce_layout& layout, const tensor& x, tensor& out, int threads) const {
    tensor wide(data_type::float32, x.shape());
    const H* src = typed<H>(x);
    float* w = wide.mutable_data<float>();
    for (std::int64_t k = 0; k < x.element_count(); ++k) w[k] = static_cast<float>(src[k]);
    tensor result(data_type::float32, out.shape());
    reduce_any<float>(op_, layout, wide, result, threads);
    H* dst = typed_mutable<H>(out);
    const float* r = result.data<float>();
    for (std::int64_t k = 0; k < out.element_count(); ++k) dst[k] = H(r[k]);
  }

  reduce_op op_;
  bool keep_dims_;
  bool noop_with_empty_axes_;
  bool axes_from_input_;
  std::vector<std::int64_t> axes_;
};

class arg_kernel final : public kernel {
 public:
  arg_kernel(const kernel_build_info& info, bool is_max)
      : is_max_(is_max),
        axis_(info.node.attr_int("axis", 0)),
        keep_dims_(info.node.attr_int("keepdims", 1) != 0),
        last_(info.node.attr_int("select_last_index", 0) != 0) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t axis = detail::normalize_axis(ctx, axis_, x.rank());
    const std::int64_t n = x.dim(axis);
    const shape_t out_shape = ir::shape_rules::reduce_shape<std::int64_t>(x.shape(), std::vector<std::int64_t>{axis_}, keep_dims_);
    const std::int64_t outer = detail::product(x.shape(), 0, axis);
    const std::int64_t inner = detail::product(x.shape(), axis + 1);
    if (n == 0 && outer * inner > 0) ctx.fail("cannot take the index of an extreme over an empty axis");
    tensor& out = ctx.allocate_output(0, data_type::int64, out_shape);
    std::int64_t* dst = out.mutable_data<std::int64_t>();
    dispatch_types(ctx, x.dtype(), reduce_types{}, [&](auto tag) {
      using T = decltype(tag);
      using V = std::conditional_t<is_floating_v<T> && !std::is_same_v<T, double>, float, T>;
      const T* src = typed<T>(x);
      for (std::int64_t o = 0; o < outer; ++o) {
        for (std::int64_t i = 0; i < inner; ++i) {
          const T* p = src + o * n * inner + i;
          V best = static_cast<V>(p[0]);
          std::int64_t where = 0;
          for (std::int64_t k = 1; k < n; ++k) {
            const V v = static_cast<V>(p[k * inner]);
            const bool better = is_max_ ? (last_ ? v >= best : v > best) : (last_ ? v <= best : v < best);
            if (better) {
              best = v;
              where = k;
            }
          }
          dst[o * inner + i] = where;
        }
      }
    });
  }

 private:
  bool is_max_;
  std::int64_t axis_;
  bool keep_dims_;
  bool last_;
};

}  // namespace
}  // namespace shape_detail

void register_reduce_kernels(kernel_registry& r) {
  using namespace shape_detail;
  struct entry {
    const char* name;
    reduce_op op;
  };
  for (const entry e : {entry{"ReduceSum", reduce_op::sum}, entry{"ReduceMean", reduce_op::mean},
                        entry{"ReduceMax", reduce_op::max}, entry{"ReduceMin", reduce_op::min},
                        entry{"ReduceProd", reduce_op::prod}, entry{"ReduceL1", reduce_op::l1},
                        entry{"ReduceL2", reduce_op::l2}, entry{"ReduceLogSum", reduce_op::log_sum},
                        entry{"ReduceLogSumExp", reduce_op::log_sum_exp},
                        entry{"ReduceSumSquare", reduce_op::sum_square}}) {
    // Axes move from an attribute to an input at opset 13 for ReduceSum, 18 for the rest.
    const std::int64_t since = e.op == reduce_op::sum ? 13 : 18;
    const reduce_op op = e.op;
    r.add("", e.name, [op, since](const kernel_build_info& info) -> std::unique_ptr<kernel> {
      return std::make_unique<reduce_kernel>(info, op, since);
    });
  }
  r.add("", "ArgMax", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<arg_kernel>(info, true);
  });
  r.add("", "ArgMin", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<arg_kernel>(info, false);
  });
  register_cumsum_kernels(r);
}

}  // namespace inferopt::runtime
