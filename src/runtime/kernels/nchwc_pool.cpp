// inferopt.nchwc MaxPool, AveragePool and GlobalAveragePool on blocked activations
// (nchwc.hpp), 2 spatial dims, float32; and inferopt.cpu MaxPoolNhwc on channels-last uint8 or
// int8 activations (int8_nhwc.hpp). MaxPool and AveragePool run oneDNN's JIT pooling (one
// primitive per input shape, at most four kept); GlobalAveragePool is a loop that sums each
// block of channels as one vector.
// Attributes: those of the ONNX op. The session converts only the forms these kernels take:
// MaxPool without Indices, storage_order 0 and dilations 1; AveragePool without ceil_mode
// when it counts the padding.
// Error bound: max is exact; averages sum in float32 (ONNX's reference does the same).
#include "nchwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <algorithm>

#include "int8_nhwc.hpp"
#include "onednn_common.hpp"
#include "nn_common.hpp"
#include "omp_team.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {
namespace {

using dnnl::memory;

/// An activation as oneDNN sees it: logical [N, C, H, W], its element type and memory format.
struct pool_operand {
  std::int64_t n, c, h, w;
  memory::data_type type;
  memory::format_tag format;
  data_type onnx_type;
  std::int64_t block;  // 0: channels-last

  [[nodiscard]] memory::desc desc(std::int64_t height, std::int64_t width) const { return {{n, c, height, width}, type, format}; }
  /// The output's shape in this layout for spatial size oh x ow.
  [[nodiscard]] shape_t output_shape(std::int64_t oh, std::int64_t ow) const {
    return block > 0 ? shape_t{n, c / block, oh, ow, block} : shape_t{n, oh, ow, c};
  }
};

/// The input as a blocked float tensor: [N, C/b, H, W, b], b 8 or 16. @throws via ctx.fail otherwise.
const tensor& blocked_input(const kernel_context& ctx) {
  const tensor& x = ctx.input(0);
  if (x.dtype() != data_type::float32 || x.rank() != 5 || (x.dim(4) != 8 && x.dim(4) != 16)) {
    ctx.fail("X of shape " + to_string(x.shape()) + " is not a blocked float tensor");
  }
  return x;
}

pool_operand blocked_operand(const kernel_context& ctx) {
  const tensor& x = blocked_input(ctx);
  return {x.dim(0), x.dim(1) * x.dim(4), x.dim(2), x.dim(3), memory::data_type::f32,
          onednn::blocked_tag(static_cast<int>(x.dim(4))), data_type::float32, x.dim(4)};
}

pool_operand channels_last_operand(const kernel_context& ctx) {
  const tensor& x = ctx.input(0);
  if ((x.dtype() != data_type::uint8 && x.dtype() != data_type::int8) || x.rank() != 4) {
    ctx.fail("X of shape " + to_string(x.shape()) + " is not a channels-last int8 tensor");
  }
  const memory::data_type type = x.dtype() == data_type::uint8 ? memory::data_type::u8 : memory::data_type::s8;
  return {x.dim(0), x.dim(3), x.dim(1), x.dim(2), type, memory::format_tag::nhwc, x.dtype(), 0};
}

class onednn_pool_kernel final : public kernel {
 public:
  onednn_pool_kernel(window_attrs attrs, dnnl::algorithm kind, bool blocked)
      : attrs_(std::move(attrs)), kind_(kind), blocked_(blocked) {}

  void compute(kernel_context& ctx) override {
    const pool_operand x = blocked_ ? blocked_operand(ctx) : channels_last_operand(ctx);
    const window_geometry g = resolve_window(ctx, attrs_, {x.h, x.w}, attrs_.kernel_shape);
    tensor& y = ctx.allocate_output(0, x.onnx_type, x.output_shape(g.out[0], g.out[1]));
    if (y.element_count() == 0) return;
    const std::int64_t visits = y.element_count() * attrs_.kernel_shape[0] * attrs_.kernel_shape[1];
    const omp_team_for_call team(worthwhile_threads(visits, ctx.threads()));  // oneDNN sizes its partition at creation
    primitive& p = primitive_for(x, g);
    p.src.set_data_handle(const_cast<void*>(ctx.input(0).raw()));
    p.dst.set_data_handle(y.mutable_raw());
    p.run.execute(onednn::stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}});
  }

 private:
  struct primitive {
    std::int64_t n, c, h, w;
    memory::data_type type;
    dnnl::pooling_forward run;
    memory src, dst;
  };

  primitive& primitive_for(const pool_operand& x, const window_geometry& g) {
    return cache_.find_or_make(
        [&](const primitive& p) { return p.n == x.n && p.c == x.c && p.h == x.h && p.w == x.w && p.type == x.type; }, [&] {
          // oneDNN sizes the output by floor division from the padding; in ceil mode the right
          // padding grows until the last window starts where ONNX's does (it reads no input there).
          auto right_pad = [&](std::size_t d, std::int64_t in) {
            return std::max(g.pad_end[d], (g.out[d] - 1) * g.stride[d] + g.kernel[d] - in - g.pad_begin[d]);
          };
          const memory::dims pad_r{right_pad(0, x.h), right_pad(1, x.w)};
          const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, kind_, x.desc(x.h, x.w),
                                              x.desc(g.out[0], g.out[1]), {g.stride[0], g.stride[1]},
                                              {g.kernel[0], g.kernel[1]}, {g.pad_begin[0], g.pad_begin[1]}, pad_r);
          const dnnl::pooling_forward::primitive_desc pd(d, onednn::engine());
          return primitive{x.n, x.c, x.h, x.w, x.type, dnnl::pooling_forward(pd),
                           memory(pd.src_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                           memory(pd.dst_desc(), onednn::engine(), DNNL_MEMORY_NONE)};
        });
  }

  window_attrs attrs_;
  dnnl::algorithm kind_;
  bool blocked_;
  onednn::recent_primitives<primitive> cache_;
};

class nchwc_global_average_kernel final : public kernel {
 public:
  void compute(kernel_context& ctx) override {
    const tensor& x = blocked_input(ctx);
    const std::int64_t planes = x.dim(0) * x.dim(1), size = x.dim(2) * x.dim(3), block = x.dim(4);
    tensor& y = ctx.allocate_output(0, data_type::float32, {x.dim(0), x.dim(1), 1, 1, block});
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    const float scale = size > 0 ? 1.0f / static_cast<float>(size) : 0.0f;
    detail::parallel_for(ctx.threads(), planes, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(size * block, 1)),
                         [&](std::int64_t begin, std::int64_t end) {
                           for (std::int64_t p = begin; p < end; ++p) block_channel_means(in + p * size * block, size, block, scale, out + p * block);
                         });
  }
};

}  // namespace

void register_nchwc_pool_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "MaxPool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<onednn_pool_kernel>(parse_window_attrs(info, true), dnnl::algorithm::pooling_max, true);
  });
  r.add(executor_fused_domain, "MaxPoolNhwc", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<onednn_pool_kernel>(parse_window_attrs(info, true), dnnl::algorithm::pooling_max, false);
  });
  r.add(nchwc_domain, "AveragePool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const bool include_pad = info.node.attr_int("count_include_pad", 0) != 0;
    return std::make_unique<onednn_pool_kernel>(parse_window_attrs(info, true, false),
                                                include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                            : dnnl::algorithm::pooling_avg_exclude_padding,
                                                true);
  });
  r.add(nchwc_domain, "GlobalAveragePool", [](const kernel_build_info&) -> std::unique_ptr<kernel> {
    return std::make_unique<nchwc_global_average_kernel>();
  });
}

}  // namespace inferopt::runtime::nn
#else
namespace inferopt::runtime::nn {
void register_nchwc_pool_kernels(kernel_registry&) {}
}  // namespace inferopt::runtime::nn
#endif
