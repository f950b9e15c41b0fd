// inferopt.nchwc ChannelScale: Y = X * S on blocked activations (nchwc.hpp), S one value per
// image and channel: X [N, C/b, H, W, b], S [N or 1, C/b, 1, 1, b]. The Mul of a
// squeeze-excitation block, as one pass over X that multiplies each position's b channels by
// the block's b scales (the general broadcast walks X in rows of b values), b 8 or 16.
// Float32, exact.
#include <algorithm>

#include "kernel_util.hpp"
#include "nchwc.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

class channel_scale_kernel final : public kernel {
 public:
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& s = ctx.input(1);
    const bool shapes_fit = x.rank() == 5 && s.rank() == 5 && x.dtype() == data_type::float32 &&
                            s.dtype() == data_type::float32 && (s.dim(0) == x.dim(0) || s.dim(0) == 1) &&
                            s.dim(1) == x.dim(1) && s.dim(2) == 1 && s.dim(3) == 1 && s.dim(4) == x.dim(4) &&
                            (x.dim(4) == 8 || x.dim(4) == 16);
    if (!shapes_fit) ctx.fail("X " + to_string(x.shape()) + " and S " + to_string(s.shape()) + " are not a blocked tensor and its channel scales");
    const std::int64_t blocks = x.dim(1), size = x.dim(2) * x.dim(3), block = x.dim(4);
    tensor& y = ctx.allocate_output(0, data_type::float32, x.shape());
    const float* in = x.data<float>();
    const float* scale = s.data<float>();
    float* out = y.mutable_data<float>();
    const std::int64_t planes = x.dim(0) * blocks, plane = size * block;
    detail::parallel_for(ctx.threads(), planes, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(plane, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t p = begin; p < end; ++p) {
                             const float* sp = scale + (s.dim(0) == 1 ? p % blocks : p) * block;
                             scale_block_channels(in + p * plane, sp, out + p * plane, size, block);
                           }
                         });
  }
};

}  // namespace

void register_nchwc_scale_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "ChannelScale", [](const kernel_build_info&) -> std::unique_ptr<kernel> {
    return std::make_unique<channel_scale_kernel>();
  });
}

}  // namespace inferopt::runtime::nn
