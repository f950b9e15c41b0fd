// inferopt.nchwc ReorderInput and ReorderOutput, the edges of a blocked region (nchwc.hpp),
// and the choice of the channel block.
//   ReorderInput (attribute block):     X [N, C, H, W] -> Y [N, ceil(C/block), H, W, block],
//                                       padding channels zero.
//   ReorderOutput (attribute channels): X [N, C/b, H, W, b] -> Y [N, channels, H, W].
// Attribute layout "NHWC" puts the plain side in [N, H, W, C] instead: the Transpose that
// channels-last models (ConvNeXt) wrap around their LayerNorm and MLP then costs no pass of
// its own.
// Float32. Both are copies (exact), parallel over (image, channel block).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernel_util.hpp"
#include "nn_gemm.hpp"
#include "nchwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace inferopt::runtime::nn {

void register_nchwc_conv_kernels(kernel_registry& r);
void register_nchwc_pool_kernels(kernel_registry& r);
void register_nchwc_scale_kernels(kernel_registry& r);
void register_nchwc_gather_kernels(kernel_registry& r);

namespace {

/// Where channel c at position pos of one plain image lies: c * channel + pos * position
/// (NCHW: channel = H*W, position = 1; NHWC: channel = 1, position = C).
struct plain_layout {
  std::int64_t channel, position;
  static plain_layout of(bool nhwc, std::int64_t channels, std::int64_t size) {
    return nhwc ? plain_layout{1, channels} : plain_layout{size, 1};
  }
};

/// Channel block `cb` of one image: plain -> blocked [size, block], padding zero.
void block_channels(const float* plain, plain_layout in, float* blocked, std::int64_t cb, std::int64_t channels,
                    std::int64_t size, std::int64_t block) {
  const std::int64_t c0 = cb * block, valid = std::min(block, channels - c0);
  for (std::int64_t pos = 0; pos < size; ++pos) {
    float* b = blocked + pos * block;
    const float* p = plain + c0 * in.channel + pos * in.position;
    for (std::int64_t k = 0; k < valid; ++k) b[k] = p[k * in.channel];
    for (std::int64_t k = valid; k < block; ++k) b[k] = 0.0f;
  }
}

/// Channel block `cb` of one image: blocked [size, block] -> plain, padding dropped.
void unblock_channels(const float* blocked, float* plain, plain_layout out, std::int64_t cb, std::int64_t channels,
                      std::int64_t size, std::int64_t block) {
  const std::int64_t c0 = cb * block, valid = std::min(block, channels - c0);
  for (std::int64_t pos = 0; pos < size; ++pos) {
    const float* b = blocked + pos * block;
    float* p = plain + c0 * out.channel + pos * out.position;
    for (std::int64_t k = 0; k < valid; ++k) p[k * out.channel] = b[k];
  }
}

/// Calls fn(image, channel block) for every block of a [N, C, size] tensor, in parallel.
template <class Fn>
void for_each_channel_block(const kernel_context& ctx, std::int64_t n, std::int64_t channels, std::int64_t size,
                            std::int64_t block, Fn&& fn) {
  const std::int64_t blocks = (channels + block - 1) / block;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(size * block, 1));
  detail::parallel_for(ctx.threads(), n * blocks, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) fn(t / blocks, t % blocks);
  });
}

/// Whether a reorder's plain side is NHWC (attribute layout "NHWC"; default "NCHW").
bool nhwc_layout(const kernel_build_info& info) {
  const std::string layout = info.node.attr_string("layout", "NCHW");
  if (layout != "NCHW" && layout != "NHWC") info.fail("layout must be NCHW or NHWC, got '" + layout + "'");
  return layout == "NHWC";
}

class reorder_input_kernel final : public kernel {
 public:
  reorder_input_kernel(std::int64_t block, bool nhwc) : block_(block), nhwc_(nhwc) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32 || x.rank() != 4) ctx.fail("X must be a float 4-D tensor");
    const std::int64_t n = x.dim(0), c = x.dim(nhwc_ ? 3 : 1), h = x.dim(nhwc_ ? 1 : 2), w = x.dim(nhwc_ ? 2 : 3);
    const std::int64_t blocks = (c + block_ - 1) / block_, size = h * w;
    tensor& y = ctx.allocate_output(0, data_type::float32, {n, blocks, h, w, block_});
    const plain_layout in_layout = plain_layout::of(nhwc_, c, size);
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    for_each_channel_block(ctx, n, c, size, block_, [&](std::int64_t image, std::int64_t cb) {
      block_channels(in + image * c * size, in_layout, out + (image * blocks + cb) * size * block_, cb, c, size, block_);
    });
  }

 private:
  std::int64_t block_;
  bool nhwc_;
};

class reorder_output_kernel final : public kernel {
 public:
  reorder_output_kernel(std::int64_t channels, bool nhwc) : channels_(channels), nhwc_(nhwc) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32 || x.rank() != 5) ctx.fail("X must be a blocked float tensor");
    const std::int64_t n = x.dim(0), h = x.dim(2), w = x.dim(3), block = x.dim(4);
    if (x.dim(1) != (channels_ + block - 1) / block) ctx.fail("X has " + std::to_string(x.dim(1)) + " channel blocks, not those of " + std::to_string(channels_) + " channels");
    tensor& y = ctx.allocate_output(0, data_type::float32, nhwc_ ? shape_t{n, h, w, channels_} : shape_t{n, channels_, h, w});
    const std::int64_t size = h * w, blocks = x.dim(1);
    const plain_layout out_layout = plain_layout::of(nhwc_, channels_, size);
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    for_each_channel_block(ctx, n, channels_, size, block, [&](std::int64_t image, std::int64_t cb) {
      unblock_channels(in + (image * blocks + cb) * size * block, out + image * channels_ * size, out_layout, cb, channels_,
                       size, block);
    });
  }

 private:
  std::int64_t channels_;
  bool nhwc_;
};


}  // namespace

int nchwc_block() noexcept {
#ifdef INFEROPT_WITH_ONEDNN
  static const int block = [] {
    // oneDNN's GEMM backend decides whether oneDNN serves at all and applies INFEROPT_NN_ISA's cap.
    const char* layout = std::getenv("INFEROPT_LAYOUT");
    if ((layout && std::strcmp(layout, "plain") == 0) || !onednn_gemm_backend()) return 0;
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa == dnnl_cpu_isa_avx512_core || isa == dnnl_cpu_isa_avx512_core_vnni || isa == dnnl_cpu_isa_avx512_core_bf16 ||
        isa == dnnl_cpu_isa_avx512_core_amx) {
      return 16;
    }
    return isa == dnnl_cpu_isa_avx2 || isa == dnnl_cpu_isa_avx2_vnni ? 8 : 0;
  }();
  return block;
#else
  return 0;
#endif
}

}  // namespace inferopt::runtime::nn

namespace inferopt::runtime {
int blocked_layout_block() noexcept { return nn::nchwc_block(); }
}  // namespace inferopt::runtime

namespace inferopt::runtime::nn {

void register_nchwc_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "ReorderInput", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const std::int64_t block = info.node.attr_int("block", 16);
    if (block != 8 && block != 16) info.fail("block must be 8 or 16");
    return std::make_unique<reorder_input_kernel>(block, nhwc_layout(info));
  });
  r.add(nchwc_domain, "ReorderOutput", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const std::int64_t channels = info.node.attr_int("channels", 0);
    if (channels <= 0) info.fail("channels must be positive");
    return std::make_unique<reorder_output_kernel>(channels, nhwc_layout(info));
  });
  register_nchwc_conv_kernels(r);
  register_nchwc_pool_kernels(r);
  register_nchwc_scale_kernels(r);
  register_nchwc_gather_kernels(r);
}

}  // namespace inferopt::runtime::nn
