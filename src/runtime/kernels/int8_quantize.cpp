// inferopt.cpu QuantizeLinearNhwc (int8_nhwc.hpp): QuantizeLinear of a float [N, C, H, W]
// tensor straight into the channels-last int8 layout [N, H, W, C], where an int8 chain starts:
// one pass instead of QuantizeLinear and a Transpose. Per tensor:
// y = saturate(round_half_even(x / scale) + zero_point), the same float division and rounding
// as QuantizeLinear (kernels/quantize.cpp), so the values are identical.
#include <algorithm>
#include <limits>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "int8_nhwc.hpp"
#include "kernel_util.hpp"
#include "nn_common.hpp"

namespace inferopt::runtime::nn {

namespace {

/// One row of W floats quantized into `out` (contiguous); vectorizes (no library rounding call).
void quantize_row(const float* x, std::int64_t w, float scale, float zero, float lo, float hi, float* out) {
  constexpr float magic = 12582912.0f;  // 1.5 * 2^23: adding and removing it rounds half to even
  for (std::int64_t i = 0; i < w; ++i) {
    float q = (x[i] / scale + magic) - magic + zero;
    q = q >= lo ? q : lo;
    out[i] = q <= hi ? q : hi;
  }
}

template <class T>
void quantize_to_nhwc(int threads, const float* x, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                      float scale, float zero, T* y) {
  const float lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  detail::parallel_for(threads, n * h, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(w * c, 1)),
                       [&](std::int64_t begin, std::int64_t end) {
                         std::vector<float> row(static_cast<std::size_t>(w));
                         for (std::int64_t r = begin; r < end; ++r) {
                           const std::int64_t b = r / h, i = r % h;
                           T* out = y + r * w * c;  // [b, i, :, :]
                           for (std::int64_t k = 0; k < c; ++k) {
                             quantize_row(x + ((b * c + k) * h + i) * w, w, scale, zero, lo, hi, row.data());
                             for (std::int64_t j = 0; j < w; ++j) out[j * c + k] = static_cast<T>(row[j]);
                           }
                         }
                       });
}

class quantize_nhwc_kernel final : public kernel {
 public:
  quantize_nhwc_kernel(data_type type, float scale, std::int32_t zero) : type_(type), scale_(scale), zero_(zero) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32 || x.rank() != 4) ctx.fail("X of shape " + to_string(x.shape()) + " is not a float [N, C, H, W] tensor");
    const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    tensor& y = ctx.allocate_output(0, type_, {n, h, w, c});
    if (y.element_count() == 0) return;
    const float zero = static_cast<float>(zero_);
    if (type_ == data_type::uint8) quantize_to_nhwc(ctx.threads(), x.data<float>(), n, c, h, w, scale_, zero, y.mutable_data<std::uint8_t>());
    else quantize_to_nhwc(ctx.threads(), x.data<float>(), n, c, h, w, scale_, zero, y.mutable_data<std::int8_t>());
  }

 private:
  data_type type_;
  float scale_;
  std::int32_t zero_;
};

std::unique_ptr<kernel> make_quantize_nhwc(const kernel_build_info& info) {
  const ir::node& n = info.node;
  if (n.inputs().size() != 3 || !n.input(2)) info.unsupported("QuantizeLinearNhwc needs x, y_scale and y_zero_point");
  const data_type type = n.input(2)->elem_type();
  if (type != data_type::uint8 && type != data_type::int8) info.unsupported("only uint8 and int8 outputs are supported");
  const float scale = scalar_scale(info, 1);
  if (!(scale > 0.0f)) info.fail("y_scale must be positive");
  return std::make_unique<quantize_nhwc_kernel>(type, scale, scalar_zero_point(info, 2));
}

}  // namespace

void register_int8_quantize_kernels(kernel_registry& r) { r.add(executor_fused_domain, "QuantizeLinearNhwc", make_quantize_nhwc); }

}  // namespace inferopt::runtime::nn
