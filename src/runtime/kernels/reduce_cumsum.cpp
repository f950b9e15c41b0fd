// CumSum: running sums along one axis (exclusive and reverse variants). Floating types sum in
// double and round each prefix once; integers sum in their own type, wrapping like numpy.

#include "shape_common.hpp"

namespace inferopt::runtime::shape_detail {
namespace {

class cumsum_kernel final : public kernel {
 public:
  explicit cumsum_kernel(const kernel_build_info& info)
      : exclusive_(info.node.attr_int("exclusive", 0) != 0), reverse_(info.node.attr_int("reverse", 0) != 0) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::size_t axis = detail::normalize_axis(ctx, int_scalar(ctx, 1, "axis"), x.rank());
    const std::int64_t n = x.dim(axis);
    const std::int64_t outer = detail::product(x.shape(), 0, axis);
    const std::int64_t inner = detail::product(x.shape(), axis + 1);
    tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
    dispatch_types(ctx, x.dtype(), numeric_types{}, [&](auto tag) {
      using T = decltype(tag);
      using A = std::conditional_t<is_floating_v<T>, double, T>;
      const T* src = typed<T>(x);
      T* dst = typed_mutable<T>(out);
      std::vector<A> sum(static_cast<std::size_t>(inner));
      for (std::int64_t o = 0; o < outer; ++o) {
        std::fill(sum.begin(), sum.end(), A{0});
        for (std::int64_t step = 0; step < n; ++step) {
          const std::int64_t k = reverse_ ? n - 1 - step : step;
          const T* s = src + (o * n + k) * inner;
          T* d = dst + (o * n + k) * inner;
          for (std::int64_t i = 0; i < inner; ++i) {
            A& acc = sum[static_cast<std::size_t>(i)];
            const A v = static_cast<A>(s[i]);
            if (exclusive_) {
              d[i] = static_cast<T>(acc);
              acc = static_cast<A>(acc + v);
            } else {
              acc = static_cast<A>(acc + v);
              d[i] = static_cast<T>(acc);
            }
          }
        }
      }
    });
  }

 private:
  bool exclusive_;
  bool reverse_;
};

}  // namespace

void register_cumsum_kernels(kernel_registry& r) { r.add("", "CumSum", factory<cumsum_kernel>(), 11); }

}  // namespace inferopt::runtime::shape_detail
