// inferopt.cpu QLinearConvNhwc (int8_nhwc.hpp): a quantized convolution of channels-last uint8
// or int8 activations with int8 weights, run by oneDNN's int8 JIT convolution (VNNI where the
// CPU has it), which accumulates in int32 and requantizes each output tile while it is in
// cache: per-channel output scales x_scale * w_scale[m] / y_scale (computed in that order, as
// onnxruntime does), the zero points of x (its padding included) and y, and a Relu post-op.
// The weights are reordered into oneDNN's layout once per primitive layout, and held once
// where the input shape is static (int8_weights.hpp); primitives are kept per input shape.
#include "int8_nhwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <algorithm>

#include "inferopt/ir/graph.hpp"
#include "int8_weights.hpp"
#include "nn_common.hpp"
#include "nn_gemm.hpp"
#include "omp_team.hpp"
#include "onednn_common.hpp"

namespace inferopt::runtime::nn {
namespace {

using dnnl::memory;

/// What one quantized convolution needs, independent of the input's batch and spatial size.
struct qconv_spec {
  window_attrs attrs;
  std::int64_t group = 1;
  dims w_shape;  // [M, C/group, kh, kw]
  memory::data_type x_type = memory::data_type::u8, y_type = memory::data_type::u8;
  std::vector<float> output_scales;  // one, or one per output channel
  std::int32_t x_zero = 0, y_zero = 0;
  bool relu = false;
  bool has_bias = false;
};

memory::data_type onednn_type(data_type t) {
  return t == data_type::int8 ? memory::data_type::s8 : memory::data_type::u8;
}

data_type onnx_type(memory::data_type t) { return t == memory::data_type::s8 ? data_type::int8 : data_type::uint8; }

dnnl::convolution_forward::primitive_desc describe_qconv(const qconv_spec& s, std::int64_t n, std::int64_t h,
                                                         std::int64_t w, const window_geometry& g) {
  const std::int64_t m = s.w_shape[0], c = s.w_shape[1] * s.group;
  const memory::desc src({n, c, h, w}, s.x_type, memory::format_tag::nhwc);
  const memory::desc dst({n, m, g.out[0], g.out[1]}, s.y_type, memory::format_tag::nhwc);
  const memory::dims wdims = s.group == 1 ? memory::dims{m, c, s.w_shape[2], s.w_shape[3]}
                                          : memory::dims{s.group, m / s.group, c / s.group, s.w_shape[2], s.w_shape[3]};
  const memory::desc weights(wdims, memory::data_type::s8, memory::format_tag::any);
  const memory::desc bias = s.has_bias ? memory::desc({m}, memory::data_type::s32, memory::format_tag::a) : memory::desc();
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                          weights, bias, dst, {g.stride[0], g.stride[1]},
                                          {g.dilation[0] - 1, g.dilation[1] - 1}, {g.pad_begin[0], g.pad_begin[1]},
                                          {g.pad_end[0], g.pad_end[1]});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the step's scratch, in the session's arena
  attr.set_output_scales(s.output_scales.size() > 1 ? 1 << 1 : 0, s.output_scales);
  if (s.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {s.x_zero});
  if (s.y_zero != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {s.y_zero});
  if (s.relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return {d, attr, onednn::engine()};
}

class qconv_kernel final : public kernel {
 public:
  qconv_kernel(qconv_spec spec, int8_weight_layouts weights) : spec_(std::move(spec)), weights_(std::move(weights)) {}

  void compute(kernel_context& ctx) override {
    const tensor& x = ctx.input(0);
    const std::int64_t channels = spec_.w_shape[1] * spec_.group, m = spec_.w_shape[0];
    if (x.dtype() != onnx_type(spec_.x_type) || x.rank() != 4 || x.dim(3) != channels) {
      ctx.fail("X of shape " + to_string(x.shape()) + " is not the channels-last " + std::to_string(channels) +
               "-channel tensor the conv was built for");
    }
    const std::int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2);
    const window_geometry g = resolve_window(ctx, spec_.attrs, {h, w}, {spec_.w_shape[2], spec_.w_shape[3]});
    tensor& y = ctx.allocate_output(0, onnx_type(spec_.y_type), {n, g.out[0], g.out[1], m});
    if (y.element_count() == 0) return;
    const std::int64_t macs = y.element_count() * spec_.w_shape[1] * spec_.w_shape[2] * spec_.w_shape[3];
    const omp_team_for_call team(worthwhile_threads(macs, ctx.threads()));  // oneDNN sizes its partition at creation
    primitive& p = primitive_for(ctx, n, h, w, g);
    p.src.set_data_handle(const_cast<void*>(x.raw()));
    p.dst.set_data_handle(y.mutable_raw());
    onednn::point_scratchpad(ctx, p.scratch);
    if (spec_.has_bias) {
      const tensor& b = ctx.input(8);
      if (b.dtype() != data_type::int32 || b.element_count() != m) ctx.fail("B must be " + std::to_string(m) + " int32 values");
      p.bias.set_data_handle(const_cast<void*>(b.raw()));
    }
    p.run.execute(onednn::stream(), p.args);  // the memories' handles were set above
  }

 private:
  struct primitive {
    std::int64_t n, h, w;
    dnnl::convolution_forward run;
    memory src, weights, bias, dst, scratch;
    std::unordered_map<int, memory> args;  // the memories above, made once
  };

  primitive& primitive_for(const kernel_context& ctx, std::int64_t n, std::int64_t h, std::int64_t w,
                           const window_geometry& g) {
    return cache_.find_or_make([&](const primitive& p) { return p.n == n && p.h == h && p.w == w; }, [&] {
      const auto pd = describe_qconv(spec_, n, h, w, g);
      primitive p{n, h, w, dnnl::convolution_forward(pd), memory(pd.src_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  weights_.in(ctx, pd.weights_desc(), onnx_weights_desc()),
                  memory(pd.bias_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  memory(pd.dst_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  memory(pd.scratchpad_desc(), onednn::engine(), DNNL_MEMORY_NONE), {}};
      p.args = onednn::primitive_args(p.src, p.weights, p.dst, spec_.has_bias ? &p.bias : nullptr, p.scratch);
      return p;
    });
  }

  /// The initializer's layout: oihw, or goihw per group.
  [[nodiscard]] memory::desc onnx_weights_desc() const {
    const std::int64_t m = spec_.w_shape[0], cg = spec_.w_shape[1];
    return spec_.group == 1
               ? memory::desc({m, cg, spec_.w_shape[2], spec_.w_shape[3]}, memory::data_type::s8, memory::format_tag::oihw)
               : memory::desc({spec_.group, m / spec_.group, cg, spec_.w_shape[2], spec_.w_shape[3]}, memory::data_type::s8,
                              memory::format_tag::goihw);
  }

  qconv_spec spec_;
  int8_weight_layouts weights_;
  onednn::recent_primitives<primitive> cache_;

 public:
  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return weights_.holds_own_copy(input); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.bytes(); }
};

/// The spec of `n` (QLinearConvNhwc) or, for a probe, of an ONNX Conv `n` with the given weight
/// dims, types and neutral scales.
qconv_spec spec_of(const kernel_build_info& info, const dims& w_dims, data_type x_type, data_type y_type) {
  const ir::node& n = info.node;
  qconv_spec s;
  s.attrs = parse_window_attrs(info, false);
  s.group = n.attr_int("group", 1);
  if (s.group < 1) info.fail("group must be positive");
  if (w_dims.size() != 4 || w_dims[0] % s.group != 0) info.unsupported("the int8 conv needs 4-D weights whose M divides by group");
  s.w_shape = w_dims;
  s.x_type = onednn_type(x_type);
  s.y_type = onednn_type(y_type);
  s.output_scales = {1.0f};
  s.relu = n.attr_string("activation", "") == "Relu";
  return s;
}

qconv_spec spec_of_qconv(const kernel_build_info& info) {
  const ir::node& n = info.node;
  const ir::value* w = n.inputs().size() > 3 ? n.input(3) : nullptr;
  if (!w || !w->is_constant() || !w->initializer()->has_data() || w->initializer()->dtype != data_type::int8) {
    info.unsupported("W must be a constant int8 initializer");
  }
  const ir::value* x_zero = n.inputs().size() > 2 ? n.input(2) : nullptr;
  const ir::value* y_zero = n.inputs().size() > 7 ? n.input(7) : nullptr;
  if (!x_zero || !y_zero) info.unsupported("x_zero_point and y_zero_point must be given");
  qconv_spec s = spec_of(info, w->initializer()->dims, x_zero->elem_type(), y_zero->elem_type());
  const auto x_scale = scalar_scale(info, 1);
  const auto y_scale = scalar_scale(info, 6);
  s.x_zero = scalar_zero_point(info, 2);
  s.y_zero = scalar_zero_point(info, 7);
  const auto w_scale = constant_scales(n.input(4));
  const std::int64_t m = s.w_shape[0];
  if (!w_scale || (w_scale->size() != 1 && static_cast<std::int64_t>(w_scale->size()) != m)) {
    info.unsupported("w_scale must be a constant per tensor or per output channel");
  }
  if (n.inputs().size() > 5 && n.input(5)) {
    const auto w_zero = constant_zero_points(n.input(5));
    if (!w_zero || std::any_of(w_zero->begin(), w_zero->end(), [](std::int32_t z) { return z != 0; })) {
      info.unsupported("w_zero_point must be constant zeros");
    }
  }
  s.output_scales.clear();
  for (const float ws : *w_scale) s.output_scales.push_back(x_scale * ws / y_scale);
  s.has_bias = n.inputs().size() > 8 && n.input(8) != nullptr;
  return s;
}

/// Whether oneDNN runs with VNNI (within INFEROPT_NN_ISA's cap). Without it, oneDNN halves
/// the weights of an int8 (signed) source to keep its 16-bit pair sums from saturating, which
/// loses their last bit: such convolutions stay in float.
bool has_vnni() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_vnni:
    case dnnl_cpu_isa_avx512_core_bf16:
    case dnnl_cpu_isa_avx512_core_amx:
    case dnnl_cpu_isa_avx2_vnni: return true;
    default: return false;
  }
}

}  // namespace

bool int8_conv_runs(const ir::node& conv, const std::vector<std::int64_t>& w_dims, const std::vector<std::int64_t>& x_shape,
                    data_type x_type, data_type y_type) {
  if (!int8_kernels_available()) return false;
  if (x_type == data_type::int8 && !has_vnni()) return false;
  try {
    const kernel_build_info info{conv, 0};
    const qconv_spec s = spec_of(info, w_dims, x_type, y_type);
    if (x_shape.size() != 4 || x_shape[1] != s.w_shape[1] * s.group) return false;
    const kernel_context ctx(conv, {}, {}, 1);
    const window_geometry g = resolve_window(ctx, s.attrs, {x_shape[2], x_shape[3]}, {s.w_shape[2], s.w_shape[3]});
    return !onednn::is_reference(describe_qconv(s, x_shape[0], x_shape[2], x_shape[3], g).impl_info_str());
  } catch (const std::exception&) {
    return false;
  }
}

void register_int8_conv_kernels(kernel_registry& r) {
  r.add(executor_fused_domain, "QLinearConvNhwc", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    qconv_spec spec = spec_of_qconv(info);
    const auto* weights = reinterpret_cast<const std::int8_t*>(info.node.input(3)->initializer()->bytes->data());
    return std::make_unique<qconv_kernel>(std::move(spec), int8_weight_layouts(info.node, 3, weights));
  });
}

}  // namespace inferopt::runtime::nn

namespace inferopt::runtime {
// oneDNN's GEMM backend says whether oneDNN serves at all (INFEROPT_NN_GEMM) and caps its ISA
// (INFEROPT_NN_ISA).
bool int8_kernels_available() noexcept { return nn::onednn_gemm_backend() != nullptr; }
}  // namespace inferopt::runtime
#else
namespace inferopt::runtime {
bool int8_kernels_available() noexcept { return false; }
}  // namespace inferopt::runtime
namespace inferopt::runtime::nn {
bool int8_conv_runs(const ir::node&, const std::vector<std::int64_t>&, const std::vector<std::int64_t>&, data_type, data_type) {
  return false;
}
void register_int8_conv_kernels(kernel_registry&) {}
}  // namespace inferopt::runtime::nn
#endif
