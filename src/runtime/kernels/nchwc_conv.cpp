// inferopt.nchwc Conv: Conv and com.microsoft FusedConv (2 spatial dims, float32, constant
// weights) on blocked activations (nchwc.hpp), run by oneDNN's JIT convolution. Dense,
// grouped and depthwise convolutions share it; on AVX-512 oneDNN picks its brgemm kernels
// where the plain layout would fall to im2col + GEMM (docs/BENCHMARKS.md, "blocked layout").
//
// Inputs: X ([N, C/b, H, W, b] blocked, or [N, C, H, W] plain for a stem whose C is below the
// block), W and B as in Conv, Z (FusedConv's residual, blocked like Y). Output: Y blocked.
// Attributes: Conv's, block (8 or 16), and FusedConv's activation and activation_params, or
// activation "Swish" (x * sigmoid(x), folded in by the session), and algorithm "winograd"
// (oneDNN's F(2x2, 3x3) kernel where it has one for the shape, else the direct one).
// Y = act(conv(X, W) + B + Z): Z is copied into Y (unless the memory plan put Y over it) and
// added by oneDNN's sum post-op, the activation is an eltwise post-op, so both happen while
// the output tile is in cache. Swish is the exception: a vector pass over Y after the conv
// (swish_in_place says why).
// The initializer's weights are reordered into the layout oneDNN picks once per primitive
// layout (weights fed at run time, overriding it, once per run); primitives are kept per input
// shape (at most four: dynamic shapes do not grow memory without bound).
// Error bound: float32 dot products of length C/group * kh * kw, like the plain Conv.
#include "nchwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <algorithm>
#include <cstring>

#include "inferopt/ir/graph.hpp"
#include "onednn_common.hpp"
#include "nn_common.hpp"
#include "omp_team.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {
namespace {

using dnnl::algorithm;
using dnnl::memory;

/// FusedConv's activation as oneDNN post-ops, after the residual sum when there is one.
dnnl::post_ops conv_post_ops(const activation_spec& act, bool residual) {
  dnnl::post_ops ops;
  if (residual) ops.append_sum(1.0f);
  switch (act.kind) {
    case activation::identity: break;
    case activation::relu: ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f); break;
    case activation::leaky_relu: ops.append_eltwise(1.0f, algorithm::eltwise_relu, act.alpha, 0.0f); break;
    case activation::tanh: ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f); break;
    case activation::sigmoid: ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f); break;
    case activation::clip: ops.append_eltwise(1.0f, algorithm::eltwise_clip, act.alpha, act.beta); break;
    case activation::hard_sigmoid:
      ops.append_eltwise(1.0f, algorithm::eltwise_linear, act.alpha, act.beta);
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
      break;
    case activation::hard_swish: ops.append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f); break;
  }
  return ops;
}

/// What one convolution needs, independent of the input's batch and spatial size.
struct conv_spec {
  window_attrs attrs;
  std::int64_t group = 1;
  activation_spec act;
  bool swish = false;  // x * sigmoid(x), which the session folds in (blocked_layout.hpp)
  bool residual = false;
  bool winograd = false;  // oneDNN's winograd kernel where it has one for the shape
  int block = 16;
  dims w_shape;  // [M, C/group, kh, kw]
};

/// The primitive descriptor for input [n, c, h, w] (plain or blocked) and geometry `g`.
dnnl::convolution_forward::primitive_desc describe_conv(const conv_spec& s, std::int64_t n, std::int64_t h,
                                                        std::int64_t w, const window_geometry& g, bool plain_input,
                                                        bool has_bias) {
  const std::int64_t m = s.w_shape[0], c = s.w_shape[1] * s.group;
  const memory::format_tag layout = onednn::blocked_tag(s.block);
  const memory::desc src = onednn::activation_desc(n, c, h, w, plain_input ? memory::format_tag::nchw : layout);
  const memory::desc dst = onednn::activation_desc(n, m, g.out[0], g.out[1], layout);
  const memory::dims wdims = s.group == 1 ? memory::dims{m, c, s.w_shape[2], s.w_shape[3]}
                                          : memory::dims{s.group, m / s.group, c / s.group, s.w_shape[2], s.w_shape[3]};
  const memory::desc weights(wdims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc bias = has_bias ? memory::desc({m}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
  const memory::dims strides{g.stride[0], g.stride[1]};
  const memory::dims dilates{g.dilation[0] - 1, g.dilation[1] - 1};
  const memory::dims pad_l{g.pad_begin[0], g.pad_begin[1]}, pad_r{g.pad_end[0], g.pad_end[1]};
  dnnl::primitive_attr attr;
  attr.set_post_ops(conv_post_ops(s.act, s.residual));
  // The kernel passes the step's scratch (kernel_context::scratch: a place in the session's
  // arena, shared with tensors dead at that step); oneDNN's default gives each primitive its
  // own, and its Winograd convs want up to 4 MiB each (ResNet-50's held about 10 MiB more).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.winograd) {
    try {
      const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_winograd, src,
                                              weights, bias, dst, strides, dilates, pad_l, pad_r);
      return {d, attr, onednn::engine()};
    } catch (const dnnl::error&) {
      // No winograd kernel for this shape or CPU: the direct one below.
    }
  }
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct, src,
                                          weights, bias, dst, strides, dilates, pad_l, pad_r);
  return {d, attr, onednn::engine()};
}

/// The weights as ONNX stores them ([M, C/g, kh, kw], which is oihw, or goihw per group).
memory::desc onnx_weights_desc(const conv_spec& s) {
  const std::int64_t m = s.w_shape[0], cg = s.w_shape[1];
  if (s.group == 1) return {{m, cg, s.w_shape[2], s.w_shape[3]}, memory::data_type::f32, memory::format_tag::oihw};
  return {{s.group, m / s.group, cg, s.w_shape[2], s.w_shape[3]}, memory::data_type::f32, memory::format_tag::goihw};
}

/// y * sigmoid(y) over the conv's output, after it. oneDNN 2.6's swish post-op (an exp and a
/// divide per element inside the conv's register tile) cost EfficientNet-B0 about 3 ms of
/// 12.5 at one thread; this pass over the output, with Eigen's rational logistic, about 1.6.
/// (A reciprocal estimate and Eigen's exp instead of the logistic's divide ran at half its
/// speed.) One element costs about ten multiply-adds' time, which sizes the team: at
/// worthwhile_threads' count of elements alone, EfficientNet-B0's 28x28 and 14x14 stages ran
/// their swish on one of two threads.
void swish_in_place(tensor& y, int threads) {
  constexpr std::int64_t cost_in_macs = 10;
  float* out = y.mutable_data<float>();
  const std::int64_t total = y.element_count(), piece = 4096;
  const int team = worthwhile_threads(total * cost_in_macs, threads);
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (std::int64_t k = 0; k < total; k += piece) swish(out + k, std::min(piece, total - k));
}

class nchwc_conv_kernel final : public kernel {
 public:
  nchwc_conv_kernel(conv_spec spec, const float* weights) : spec_(std::move(spec)), weights_(weights) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    // W is absent once the session released the initializer to this kernel's copy; a feed
    // overriding the initializer (old models list it as an input) is reordered for this run.
    const tensor* fed = ctx.has_input(1) && !reads_initializer(ctx) ? &ctx.input(1) : nullptr;
    if (fed && (fed->dtype() != data_type::float32 || fed->shape() != shape_t(spec_.w_shape.begin(), spec_.w_shape.end()))) {
      ctx.fail("W of shape " + to_string(fed->shape()) + " is not the " + dims_text(spec_.w_shape) + " the conv was built for");
    }
    const bool plain_input = x.rank() == 4;
    const std::int64_t channels = spec_.w_shape[1] * spec_.group;
    const bool fits = x.dtype() == data_type::float32 &&
                      (plain_input ? x.dim(1) == channels
                                   : x.rank() == 5 && x.dim(4) == spec_.block && x.dim(1) == (channels + spec_.block - 1) / spec_.block);
    if (!fits) ctx.fail("X of shape " + to_string(x.shape()) + " does not hold the " + std::to_string(channels) + " channels W reads");
    const std::int64_t n = x.dim(0), h = x.dim(2), wd = x.dim(3);
    const bool has_bias = ctx.has_input(2);
    primitive& p = primitive_for(ctx, n, h, wd, plain_input, has_bias);
    const std::int64_t m = spec_.w_shape[0], blocks = (m + spec_.block - 1) / spec_.block;
    const shape_t y_shape{n, blocks, p.out_h, p.out_w, spec_.block};
    if (spec_.residual) {
      const tensor& z = ctx.input(3);
      if (z.shape() != y_shape) ctx.fail("Z of shape " + to_string(z.shape()) + " does not match Y " + to_string(y_shape));
    }
    tensor& y = ctx.allocate_output(0, data_type::float32, y_shape);
    // The memory plan may have put Y over Z (graph_memory_plan.cpp's in_place_inputs).
    if (spec_.residual && y.raw() != ctx.input(3).raw()) std::memcpy(y.mutable_raw(), ctx.input(3).raw(), y.byte_size());
    const std::int64_t macs = n * p.out_h * p.out_w * m * spec_.w_shape[1] * spec_.w_shape[2] * spec_.w_shape[3];
    const omp_team_for_call team(worthwhile_threads(macs, ctx.threads()));
    p.src.set_data_handle(const_cast<void*>(x.raw()));
    p.dst.set_data_handle(y.mutable_raw());
    onednn::point_scratchpad(ctx, p.scratch);
    if (has_bias) {
      if (ctx.input(2).element_count() != m) ctx.fail("B must have " + std::to_string(m) + " values");
      p.bias.set_data_handle(const_cast<void*>(ctx.input(2).raw()));
    }
    if (fed) {
      std::unordered_map<int, memory> args = p.args;
      args[DNNL_ARG_WEIGHTS] = onednn::reordered(onnx_weights(fed->data<float>()), p.weights.get_desc());
      p.run.execute(onednn::stream(), args);
    } else {
      p.run.execute(onednn::stream(), p.args);  // the memories' handles were set above
    }
    if (spec_.swish) swish_in_place(y, ctx.threads());
  }

 private:
  struct primitive {
    std::int64_t n, h, w, out_h, out_w;
    bool plain_input, has_bias;
    dnnl::convolution_forward run;
    memory src, weights, bias, dst, scratch;
    // Built once: a map per call cost a handful of allocations, a tenth of a small model's run.
    std::unordered_map<int, memory> args;
  };

  /// The primitive for this input, made on first sight of it (with its window geometry, which
  /// is then not resolved again: its dims were most of a small conv's allocations).
  primitive& primitive_for(const kernel_context& ctx, std::int64_t n, std::int64_t h, std::int64_t w, bool plain_input,
                           bool has_bias) {
    return cache_.find_or_make(
        [&](const primitive& p) { return p.n == n && p.h == h && p.w == w && p.plain_input == plain_input && p.has_bias == has_bias; },
        [&] {
          // oneDNN sizes a primitive's thread partition when it creates it: inside the team.
          const window_geometry g = resolve_window(ctx, spec_.attrs, {h, w}, {spec_.w_shape[2], spec_.w_shape[3]});
          const std::int64_t macs = n * g.out[0] * g.out[1] * spec_.w_shape[0] * spec_.w_shape[1] * spec_.w_shape[2] * spec_.w_shape[3];
          const omp_team_for_call team(worthwhile_threads(macs, ctx.threads()));
          const auto pd = describe_conv(spec_, n, h, w, g, plain_input, has_bias);
          primitive p{n, h, w, g.out[0], g.out[1], plain_input, has_bias, dnnl::convolution_forward(pd),
                      memory(pd.src_desc(), onednn::engine(), DNNL_MEMORY_NONE), reordered_weights(ctx, pd.weights_desc()),
                      memory(pd.bias_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                      memory(pd.dst_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                      memory(pd.scratchpad_desc(), onednn::engine(), DNNL_MEMORY_NONE), {}};
          p.args = onednn::primitive_args(p.src, p.weights, p.dst, has_bias ? &p.bias : nullptr, p.scratch);
          return p;
        });
  }

  /// The initializer's weights in `layout`, shared by the primitives that want it: reordered
  /// from the initializer while this run reads it, else from a copy the kernel holds
  /// (the session releases initializers its readers copied: holds_own_copy). oneDNN reorders
  /// nothing out of a Winograd layout, so a conv that released its weights for one is bound
  /// to the input shape it first saw (the session marks only convs whose shape is fixed).
  memory reordered_weights(const kernel_context& ctx, const memory::desc& layout) {
    return weights_in_.in(layout, [&] {
      if (weights_in_.empty() || reads_initializer(ctx)) return onnx_weights(weights_);
      if (weights_in_.latest().get_desc().data.format_kind == dnnl_format_kind_wino) {
        ctx.fail("its Winograd weights were laid out for another input shape and its initializer was released");
      }
      return weights_in_.latest();
    });
  }

  /// Whether this run's W is the initializer the kernel was built on (not released, not a feed).
  [[nodiscard]] bool reads_initializer(const kernel_context& ctx) const {
    return ctx.has_input(1) && ctx.input(1).raw() == weights_;
  }

  /// Weights `w` as ONNX lays them out.
  [[nodiscard]] memory onnx_weights(const float* w) const {
    return memory(onnx_weights_desc(spec_), onednn::engine(), const_cast<float*>(w));
  }

 public:
  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return input == 1 && !weights_in_.empty(); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_in_.bytes(); }

 private:
  conv_spec spec_;
  const float* weights_;  // the initializer's data: read for the first layout only
  onednn::recent_primitives<primitive> cache_;
  onednn::weight_layouts<> weights_in_;
};

conv_spec spec_of(const kernel_build_info& info, int block) {
  const ir::node& n = info.node;
  conv_spec s;
  s.attrs = parse_window_attrs(info, false);
  s.group = n.attr_int("group", 1);
  if (s.group < 1) info.fail("group must be positive");
  s.swish = n.attr_string("activation", "") == "Swish";
  if (!s.swish) s.act = fused_conv_activation(info);
  s.residual = n.inputs().size() > 3 && n.input(3) != nullptr;
  s.winograd = n.attr_string("algorithm", "") == "winograd";
  s.block = block;
  const ir::value* w = n.input(1);
  if (!w || !w->initializer() || !w->initializer()->has_data() || w->initializer()->dtype != data_type::float32 ||
      w->initializer()->dims.size() != 4) {
    info.unsupported("the blocked conv needs constant float32 4-D weights");
  }
  s.w_shape = w->initializer()->dims;
  if (s.w_shape[0] % s.group != 0) info.fail("output channels are not divisible by group");
  return s;
}

}  // namespace

bool nchwc_conv_runs(const ir::node& conv, const std::vector<std::int64_t>& x_shape, bool plain_input, int block) {
  try {
    const kernel_build_info info{conv, 0};
    const conv_spec s = spec_of(info, block);
    if (x_shape.size() != 4 || x_shape[1] != s.w_shape[1] * s.group) return false;
    const kernel_context ctx(conv, {}, {}, 1);
    const window_geometry g = resolve_window(ctx, s.attrs, {x_shape[2], x_shape[3]}, {s.w_shape[2], s.w_shape[3]});
    const auto pd = describe_conv(s, x_shape[0], x_shape[2], x_shape[3], g, plain_input, conv.inputs().size() > 2 && conv.input(2));
    return !onednn::is_reference(pd.impl_info_str());
  } catch (const std::exception&) {
    return false;
  }
}

void register_nchwc_conv_kernels(kernel_registry& r) {
  r.add(nchwc_domain, "Conv", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    const int block = static_cast<int>(info.node.attr_int("block", 16));
    if (block != 8 && block != 16) info.fail("block must be 8 or 16");
    conv_spec spec = spec_of(info, block);
    const float* weights = reinterpret_cast<const float*>(info.node.input(1)->initializer()->bytes->data());
    return std::make_unique<nchwc_conv_kernel>(std::move(spec), weights);
  });
}

}  // namespace inferopt::runtime::nn
#else
namespace inferopt::runtime::nn {
bool nchwc_conv_runs(const ir::node&, const std::vector<std::int64_t>&, bool, int) { return false; }
void register_nchwc_conv_kernels(kernel_registry&) {}
}  // namespace inferopt::runtime::nn
#endif
