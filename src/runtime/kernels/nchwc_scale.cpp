// inferopt.nchwc ChannelScale: Y = act(X * S + B) on blocked activations (nchwc.hpp), S and B
// one value per channel: X [N, C/b, H, W, b], S [N or 1, C/b, 1, 1, b], optional B
// [1, C/b, 1, 1, b], attribute activation "" or "Relu". Squeeze-excitation's Mul (S per image)
// and a BatchNormalization with its Relu (S and B constants) as one pass over X that takes
// each position's b channels with the block's b scales (the general broadcast walks X in rows
// of b values), b 8 or 16. Float32; without B exact.
#include <algorithm>
#include <string>

#include "kernel_util.hpp"
#include "nchwc.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {

namespace {

/// Whether `v` holds one value per channel of blocked `x` (per image when `per_image`).
bool per_channel_of(const tensor& v, const tensor& x, bool per_image) {
  return v.rank() == 5 && v.dtype() == data_type::float32 && (v.dim(0) == 1 || (per_image && v.dim(0) == x.dim(0))) &&
         v.dim(1) == x.dim(1) && v.dim(2) == 1 && v.dim(3) == 1 && v.dim(4) == x.dim(4);
}

class channel_scale_kernel final : public kernel {
 public:
  explicit channel_scale_kernel(bool relu) : relu_(relu) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const tensor& s = ctx.input(1);
    const tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const bool shapes_fit = x.rank() == 5 && x.dtype() == data_type::float32 && (x.dim(4) == 8 || x.dim(4) == 16) &&
                            per_channel_of(s, x, true) && (!bias || per_channel_of(*bias, x, false));
    if (!shapes_fit) ctx.fail("X " + to_string(x.shape()) + " and S " + to_string(s.shape()) + " are not a blocked tensor and its channel scales");
    const std::int64_t blocks = x.dim(1), size = x.dim(2) * x.dim(3), block = x.dim(4);
    tensor& y = ctx.allocate_output(0, data_type::float32, x.shape());
    const float* in = x.data<float>();
    const float* scale = s.data<float>();
    const float* shift = bias ? bias->data<float>() : nullptr;
    float* out = y.mutable_data<float>();
    const std::int64_t planes = x.dim(0) * blocks, plane = size * block;
    detail::parallel_for(ctx.threads(), planes, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(plane, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t p = begin; p < end; ++p) {
                             const float* sp = scale + (s.dim(0) == 1 ? p % blocks : p) * block;
                             const float* bp = shift ? shift + (p % blocks) * block : nullptr;
                             affine_block_channels(in + p * plane, sp, bp, out + p * plane, size, block, relu_);
                           }
                         });
  }

 private:
  bool relu_;
};

}  // namespace

void register_nchwc_scale_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "ChannelScale", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const std::string activation = info.node.attr_string("activation", "");
    if (!activation.empty() && activation != "Relu") info.unsupported("ChannelScale activation '" + activation + "'");
    return std::make_unique<channel_scale_kernel>(activation == "Relu");
  });
}

}  // namespace inferopt::runtime::nn
