// inferopt.nchwc MaxPool, AveragePool and GlobalAveragePool on blocked activations
// (nchwc.hpp), 2 spatial dims, float32. MaxPool and AveragePool run oneDNN's JIT pooling
// (one primitive per input shape, at most four kept); GlobalAveragePool is a loop that sums
// each block of channels as one vector.
// Attributes: those of the ONNX op. The session converts only the forms these kernels take:
// MaxPool without Indices, storage_order 0 and dilations 1; AveragePool without ceil_mode
// when it counts the padding.
// Error bound: max is exact; averages sum in float32 (ONNX's reference does the same).
#include "nchwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <algorithm>
#include <list>

#include "onednn_common.hpp"
#include "nn_common.hpp"
#include "omp_team.hpp"

namespace inferopt::runtime::nn {
namespace {

using dnnl::memory;

/// The input as a blocked float tensor: [N, C/b, H, W, b], b 8 or 16. @throws via ctx.fail otherwise.
const tensor& blocked_input(const kernel_context& ctx) {
  const tensor& x = ctx.input(0);
  if (x.dtype() != data_type::float32 || x.rank() != 5 || (x.dim(4) != 8 && x.dim(4) != 16)) {
    ctx.fail("X of shape " + to_string(x.shape()) + " is not a blocked float tensor");
  }
  return x;
}

class nchwc_pool_kernel final : public kernel {
 public:
  nchwc_pool_kernel(window_attrs attrs, dnnl::algorithm kind) : attrs_(std::move(attrs)), kind_(kind) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = blocked_input(ctx);
    const std::int64_t n = x.dim(0), blocks = x.dim(1), h = x.dim(2), w = x.dim(3), block = x.dim(4);
    const window_geometry g = resolve_window(ctx, attrs_, {h, w}, attrs_.kernel_shape);
    tensor& y = ctx.allocate_output(0, data_type::float32, {n, blocks, g.out[0], g.out[1], block});
    const omp_team_for_call team(ctx.threads());  // oneDNN sizes its partition at creation
    primitive& p = primitive_for(n, blocks * block, h, w, static_cast<int>(block), g);
    p.src.set_data_handle(const_cast<void*>(x.raw()));
    p.dst.set_data_handle(y.mutable_raw());
    p.run.execute(onednn::stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}});
  }

 private:
  struct primitive {
    std::int64_t n, c, h, w;
    dnnl::pooling_forward run;
    memory src, dst;
  };

  primitive& primitive_for(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, int block,
                           const window_geometry& g) {
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->n == n && it->c == c && it->h == h && it->w == w) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front();
      }
    }
    const memory::format_tag layout = onednn::blocked_tag(block);
    // oneDNN sizes the output by floor division from the padding; in ceil mode the right
    // padding grows until the last window starts where ONNX's does (it reads no input there).
    auto right_pad = [&](std::size_t d, std::int64_t in) {
      return std::max(g.pad_end[d], (g.out[d] - 1) * g.stride[d] + g.kernel[d] - in - g.pad_begin[d]);
    };
    const memory::dims pad_r{right_pad(0, h), right_pad(1, w)};
    const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, kind_,
                                        onednn::activation_desc(n, c, h, w, layout),
                                        onednn::activation_desc(n, c, g.out[0], g.out[1], layout),
                                        {g.stride[0], g.stride[1]}, {g.kernel[0], g.kernel[1]},
                                        {g.pad_begin[0], g.pad_begin[1]}, pad_r);
    const dnnl::pooling_forward::primitive_desc pd(d, onednn::engine());
    if (cache_.size() == max_primitives) cache_.pop_back();
    cache_.push_front({n, c, h, w, dnnl::pooling_forward(pd), memory(pd.src_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                       memory(pd.dst_desc(), onednn::engine(), DNNL_MEMORY_NONE)});
    return cache_.front();
  }

  static constexpr std::size_t max_primitives = 4;
  window_attrs attrs_;
  dnnl::algorithm kind_;
  std::list<primitive> cache_;
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
                           for (std::int64_t p = begin; p < end; ++p) average_plane(in + p * size * block, size, block, scale, out + p * block);
                         });
  }

 private:
  /// out[b] = mean over the plane's positions of in[pos * block + b].
  static void average_plane(const float* in, std::int64_t size, std::int64_t block, float scale, float* out) {
    float sum[16] = {};
    for (std::int64_t pos = 0; pos < size; ++pos) {
      const float* v = in + pos * block;
      for (std::int64_t b = 0; b < block; ++b) sum[b] += v[b];
    }
    for (std::int64_t b = 0; b < block; ++b) out[b] = sum[b] * scale;
  }
};

}  // namespace

void register_nchwc_pool_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "MaxPool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<nchwc_pool_kernel>(parse_window_attrs(info, true), dnnl::algorithm::pooling_max);
  });
  r.add(nchwc_domain, "AveragePool", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const bool include_pad = info.node.attr_int("count_include_pad", 0) != 0;
    return std::make_unique<nchwc_pool_kernel>(parse_window_attrs(info, true, false),
                                               include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                           : dnnl::algorithm::pooling_avg_exclude_padding);
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
