// inferopt.nchwc ReorderInput and ReorderOutput, the edges of a blocked region (nchwc.hpp),
// and the choice of the channel block.
//   ReorderInput (attribute block):     X [N, C, H, W] -> Y [N, ceil(C/block), H, W, block],
//                                       padding channels zero.
//   ReorderOutput (attribute channels): X [N, C/b, H, W, b] -> Y [N, channels, H, W].
// Float32. Both are copies (exact), parallel over (image, channel block).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernel_util.hpp"
#include "nchwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace inferopt::runtime::nn {

void register_nchwc_conv_kernels(kernel_registry& r);
void register_nchwc_pool_kernels(kernel_registry& r);
void register_nchwc_scale_kernels(kernel_registry& r);

namespace {

/// Channel block `cb` of one image: plain [C, size] -> blocked [size, block], padding zero.
void block_channels(const float* plain, float* blocked, std::int64_t cb, std::int64_t channels, std::int64_t size,
                    std::int64_t block) {
  const std::int64_t c0 = cb * block, valid = std::min(block, channels - c0);
  for (std::int64_t pos = 0; pos < size; ++pos) {
    float* b = blocked + pos * block;
    for (std::int64_t k = 0; k < valid; ++k) b[k] = plain[(c0 + k) * size + pos];
    for (std::int64_t k = valid; k < block; ++k) b[k] = 0.0f;
  }
}

/// Channel block `cb` of one image: blocked [size, block] -> plain [C, size], padding dropped.
void unblock_channels(const float* blocked, float* plain, std::int64_t cb, std::int64_t channels, std::int64_t size,
                      std::int64_t block) {
  const std::int64_t c0 = cb * block, valid = std::min(block, channels - c0);
  for (std::int64_t pos = 0; pos < size; ++pos) {
    const float* b = blocked + pos * block;
    for (std::int64_t k = 0; k < valid; ++k) plain[(c0 + k) * size + pos] = b[k];
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

class reorder_input_kernel final : public kernel {
 public:
  explicit reorder_input_kernel(std::int64_t block) : block_(block) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32 || x.rank() != 4) ctx.fail("X must be a float [N, C, H, W] tensor");
    const std::int64_t n = x.dim(0), c = x.dim(1), blocks = (c + block_ - 1) / block_;
    tensor& y = ctx.allocate_output(0, data_type::float32, {n, blocks, x.dim(2), x.dim(3), block_});
    const std::int64_t size = x.dim(2) * x.dim(3);
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    for_each_channel_block(ctx, n, c, size, block_, [&](std::int64_t image, std::int64_t cb) {
      block_channels(in + image * c * size, out + (image * blocks + cb) * size * block_, cb, c, size, block_);
    });
  }

 private:
  std::int64_t block_;
};

class reorder_output_kernel final : public kernel {
 public:
  explicit reorder_output_kernel(std::int64_t channels) : channels_(channels) {}
  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    if (x.dtype() != data_type::float32 || x.rank() != 5) ctx.fail("X must be a blocked float tensor");
    const std::int64_t n = x.dim(0), block = x.dim(4);
    if (x.dim(1) != (channels_ + block - 1) / block) ctx.fail("X has " + std::to_string(x.dim(1)) + " channel blocks, not those of " + std::to_string(channels_) + " channels");
    tensor& y = ctx.allocate_output(0, data_type::float32, {n, channels_, x.dim(2), x.dim(3)});
    const std::int64_t size = x.dim(2) * x.dim(3), blocks = x.dim(1);
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    for_each_channel_block(ctx, n, channels_, size, block, [&](std::int64_t image, std::int64_t cb) {
      unblock_channels(in + (image * blocks + cb) * size * block, out + image * channels_ * size, cb, channels_, size, block);
    });
  }

 private:
  std::int64_t channels_;
};

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

}  // namespace

int nchwc_block() noexcept {
#ifdef INFEROPT_WITH_ONEDNN
  static const int block = [] {
    if (env_is("INFEROPT_LAYOUT", "plain") || env_is("INFEROPT_NN_GEMM", "eigen") || env_is("INFEROPT_NN_ISA", "generic")) return 0;
    if (env_is("INFEROPT_NN_ISA", "avx2")) dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
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
    return std::make_unique<reorder_input_kernel>(block);
  });
  r.add(nchwc_domain, "ReorderOutput", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const std::int64_t channels = info.node.attr_int("channels", 0);
    if (channels <= 0) info.fail("channels must be positive");
    return std::make_unique<reorder_output_kernel>(channels);
  });
  register_nchwc_conv_kernels(r);
  register_nchwc_pool_kernels(r);
  register_nchwc_scale_kernels(r);
}

}  // namespace inferopt::runtime::nn
