// Softmax, LogSoftmax and Hardmax (float32 and float64).
//
// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row of
// prod(shape[axis:]) values is normalized; from opset 13 only the single `axis` (default -1)
// is. Both views are [outer, len, inner] blocks: rows are contiguous when inner == 1, and
// otherwise the loops run along `inner` so that they stay contiguous and vectorize. Softmax
// subtracts the maximum before exponentiating (exact for large inputs), Hardmax marks the
// first maximum. Error bound: a few ulps of exp/log per element.
//
// A float softmax along contiguous rows takes the vector math's row softmax (the one fused
// attention uses): the scalar exp here took about 10 ns an element, a fifth of MiniLM's time
// at 128 tokens. Its differences: probabilities below 1e-37 become 0 (vector_math.hpp says
// why). Rows holding a NaN or an infinite maximum keep the scalar loop, which propagates NaN.

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <Eigen/Core>

#include "kernel_util.hpp"
#include "nn_common.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

enum class softmax_kind { softmax, log_softmax, hardmax };

template <class T>
void softmax_block(const T* x, T* y, std::int64_t len, std::int64_t inner, softmax_kind kind, T* work) {
  // work[inner]: running maximum (or argmax for Hardmax), then the sum.
  T* peak = work;
  T* sum = work + inner;
  std::copy(x, x + inner, peak);
  if (kind == softmax_kind::hardmax) {
    std::fill(sum, sum + inner, T(0));  // index of the first maximum, as T
    for (std::int64_t a = 1; a < len; ++a) {
      const T* row = x + a * inner;
      for (std::int64_t i = 0; i < inner; ++i) {
        if (row[i] > peak[i]) {
          peak[i] = row[i];
          sum[i] = static_cast<T>(a);
        }
      }
    }
    for (std::int64_t a = 0; a < len; ++a) {
      T* out = y + a * inner;
      for (std::int64_t i = 0; i < inner; ++i) out[i] = sum[i] == static_cast<T>(a) ? T(1) : T(0);
    }
    return;
  }
  for (std::int64_t a = 1; a < len; ++a) {
    const T* row = x + a * inner;
    for (std::int64_t i = 0; i < inner; ++i) peak[i] = row[i] > peak[i] ? row[i] : peak[i];
  }
  std::fill(sum, sum + inner, T(0));
  for (std::int64_t a = 0; a < len; ++a) {
    const T* row = x + a * inner;
    T* out = y + a * inner;
    for (std::int64_t i = 0; i < inner; ++i) {
      const T e = std::exp(row[i] - peak[i]);
      sum[i] += e;
      if (kind == softmax_kind::softmax) out[i] = e;
    }
  }
  if (kind == softmax_kind::softmax) {
    for (std::int64_t i = 0; i < inner; ++i) sum[i] = T(1) / sum[i];
    for (std::int64_t a = 0; a < len; ++a) {
      T* out = y + a * inner;
      for (std::int64_t i = 0; i < inner; ++i) out[i] *= sum[i];
    }
  } else {
    for (std::int64_t i = 0; i < inner; ++i) sum[i] = peak[i] + std::log(sum[i]);
    for (std::int64_t a = 0; a < len; ++a) {
      const T* row = x + a * inner;
      T* out = y + a * inner;
      for (std::int64_t i = 0; i < inner; ++i) out[i] = row[i] - sum[i];
    }
  }
}

/// Softmax of `rows` contiguous float rows of `len` from x into y, vectorized where the row
/// allows (see the file comment).
void softmax_float_rows(const float* x, float* y, std::int64_t rows, std::int64_t len, float* work) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * len;
    float* out = y + r * len;
    // One vectorized reduction: with NaN propagated, the maximum is finite only for a row
    // without NaN, +inf or all -inf (std::max_element and a NaN scan took 4x the softmax).
    const Eigen::Map<const Eigen::ArrayXf> row(in, static_cast<Eigen::Index>(len));
    if (!std::isfinite(row.maxCoeff<Eigen::PropagateNaN>())) {
      softmax_block(in, out, len, 1, softmax_kind::softmax, work);
      continue;
    }
    if (out != in) std::copy(in, in + len, out);
    softmax_rows(out, 1, len, len);
  }
}

class softmax_kernel final : public kernel {
 public:
  softmax_kernel(softmax_kind kind, std::int64_t axis, bool coerce_2d) : kind_(kind), axis_(axis), coerce_2d_(coerce_2d) {}

  void compute(kernel_context& ctx) override {
    dispatch_floating(ctx, [&](auto v) { run<decltype(v)>(ctx); });
  }

 private:
  template <class T>
  void run(kernel_context& ctx) {
    const tensor& x = ctx.input(0);
    tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (x.rank() == 0) ctx.fail("input is a scalar; it has no axis " + std::to_string(axis_));
    const std::size_t axis = detail::normalize_axis(ctx, axis_, x.rank());
    const std::int64_t outer = detail::product(x.shape(), 0, axis);
    const std::int64_t len = coerce_2d_ ? detail::product(x.shape(), axis) : x.dim(axis);
    const std::int64_t inner = coerce_2d_ ? 1 : detail::product(x.shape(), axis + 1);
    if (y.element_count() == 0) return;
    const T* xd = x.data<T>();
    T* yd = y.mutable_data<T>();
    const std::int64_t block = len * inner;
    detail::parallel_for(ctx.threads(), outer, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(block, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           std::vector<T> work(static_cast<std::size_t>(2 * inner));
                           if constexpr (std::is_same_v<T, float>) {
                             if (kind_ == softmax_kind::softmax && inner == 1) {
                               softmax_float_rows(xd + begin * block, yd + begin * block, end - begin, len, work.data());
                               return;
                             }
                           }
                           for (std::int64_t o = begin; o < end; ++o) {
                             softmax_block(xd + o * block, yd + o * block, len, inner, kind_, work.data());
                           }
                         });
  }

  softmax_kind kind_;
  std::int64_t axis_;
  bool coerce_2d_;
};

void add(kernel_registry& r, const char* op, softmax_kind kind) {
  r.add(
      "", op,
      [kind](const kernel_build_info& info) -> std::unique_ptr<kernel> {
        return std::make_unique<softmax_kernel>(kind, info.node.attr_int("axis", 1), true);
      },
      1, 12);
  r.add(
      "", op,
      [kind](const kernel_build_info& info) -> std::unique_ptr<kernel> {
        return std::make_unique<softmax_kernel>(kind, info.node.attr_int("axis", -1), false);
      },
      13);
}

}  // namespace

void register_softmax_kernels(kernel_registry& r) {
  add(r, "Softmax", softmax_kind::softmax);
  add(r, "LogSoftmax", softmax_kind::log_softmax);
  add(r, "Hardmax", softmax_kind::hardmax);
}

}  // namespace inferopt::runtime::nn
