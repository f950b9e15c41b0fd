// inferopt.cpu QLinearGlobalAveragePoolNhwc (int8_nhwc.hpp): the mean over H x W of each
// channel of a channels-last uint8 or int8 tensor [N, H, W, C], requantized:
// y = saturate(round((sum - x_zero_point H W) x_scale / (y_scale H W)) + y_zero_point), the
// sum exact in int32. Output [N, 1, 1, C].
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "int8_nhwc.hpp"
#include "kernel_util.hpp"
#include "nn_common.hpp"

namespace inferopt::runtime::nn {

namespace {

template <class T>
void average_channels(const T* x, std::int64_t positions, std::int64_t channels, float ratio, float offset, T* y,
                      std::vector<std::int32_t>& sums) {
  sums.assign(static_cast<std::size_t>(channels), 0);
  for (std::int64_t p = 0; p < positions; ++p) {
    const T* row = x + p * channels;
    for (std::int64_t c = 0; c < channels; ++c) sums[c] += row[c];
  }
  const float lowest = std::numeric_limits<T>::min(), highest = std::numeric_limits<T>::max();
  for (std::int64_t c = 0; c < channels; ++c) {
    const float v = std::nearbyint(static_cast<float>(sums[c]) * ratio + offset);
    y[c] = static_cast<T>(std::clamp(v, lowest, highest));
  }
}

class qlinear_global_average_kernel final : public kernel {
 public:
  qlinear_global_average_kernel(data_type type, float x_scale, std::int32_t x_zero, float y_scale, std::int32_t y_zero)
      : type_(type), x_scale_(x_scale), x_zero_(x_zero), y_scale_(y_scale), y_zero_(y_zero) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != type_ || x.rank() != 4) ctx.fail("X of shape " + to_string(x.shape()) + " is not a channels-last " + std::string(ir::to_string(type_)) + " tensor");
    const std::int64_t n = x.dim(0), positions = x.dim(1) * x.dim(2), channels = x.dim(3);
    if (positions == 0) ctx.fail("X has no spatial positions to average");
    tensor& y = ctx.allocate_output(0, type_, {n, 1, 1, channels});
    // (sum - zx HW) sx / (sy HW) + zy, as one multiply-add per channel.
    const float ratio = x_scale_ / (y_scale_ * static_cast<float>(positions));
    const float offset = static_cast<float>(y_zero_) - static_cast<float>(x_zero_) * x_scale_ / y_scale_;
    detail::parallel_for(ctx.threads(), n, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int32_t> sums;
      for (std::int64_t b = begin; b < end; ++b) {
        if (type_ == data_type::uint8) {
          average_channels(x.data<std::uint8_t>() + b * positions * channels, positions, channels, ratio, offset,
                           y.mutable_data<std::uint8_t>() + b * channels, sums);
        } else {
          average_channels(x.data<std::int8_t>() + b * positions * channels, positions, channels, ratio, offset,
                           y.mutable_data<std::int8_t>() + b * channels, sums);
        }
      }
    });
  }

 private:
  data_type type_;
  float x_scale_;
  std::int32_t x_zero_;
  float y_scale_;
  std::int32_t y_zero_;
};

std::unique_ptr<kernel> make_global_average(const kernel_build_info& info) {
  const ir::node& n = info.node;
  if (n.inputs().size() != 5 || !n.input(2) || !n.input(4)) info.unsupported("QLinearGlobalAveragePoolNhwc needs all 5 inputs");
  const data_type type = n.input(4)->elem_type();
  if ((type != data_type::uint8 && type != data_type::int8) || n.input(2)->elem_type() != type) {
    info.unsupported("X and Y must both be uint8 or both int8");
  }
  const float y_scale = scalar_scale(info, 3);
  if (!(y_scale > 0.0f)) info.fail("y_scale must be positive");
  return std::make_unique<qlinear_global_average_kernel>(type, scalar_scale(info, 1), scalar_zero_point(info, 2),
                                                         y_scale, scalar_zero_point(info, 4));
}

}  // namespace

void register_int8_pool_kernels(kernel_registry& r) {
  r.add(executor_fused_domain, "QLinearGlobalAveragePoolNhwc", make_global_average);
}

}  // namespace inferopt::runtime::nn
