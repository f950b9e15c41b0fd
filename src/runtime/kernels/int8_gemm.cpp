// inferopt.cpu QGemm (int8_nhwc.hpp): Y = (A - a_zero_point) B a_scale b_scale + C for uint8 or
// int8 A [M, K], constant int8 B ([K, N], or [N, K] with transB) with zero points 0 and one
// scale or one per output column, int32 C [N] in units of a_scale * b_scale; Y float32 [M, N].
// oneDNN's int8 matmul (VNNI where the CPU has it) on B reordered once into its layout; one
// primitive per row count; B held once where A's shape is static (int8_weights.hpp).
#include "int8_nhwc.hpp"

#ifdef INFEROPT_WITH_ONEDNN
#include <algorithm>

#include "inferopt/ir/graph.hpp"
#include "int8_weights.hpp"
#include "nn_common.hpp"
#include "omp_team.hpp"
#include "onednn_common.hpp"

namespace inferopt::runtime::nn {
namespace {

using dnnl::memory;

struct qgemm_spec {
  std::int64_t k = 0, n = 0;
  bool trans_b = false;
  memory::data_type a_type = memory::data_type::u8;
  std::int32_t a_zero = 0;
  std::vector<float> scales;  // a_scale * b_scale, one or one per column
  bool has_bias = false;
};

dnnl::matmul::primitive_desc describe_qgemm(const qgemm_spec& s, std::int64_t m) {
  using tag = memory::format_tag;
  const memory::desc a({m, s.k}, s.a_type, tag::ab), b({s.k, s.n}, memory::data_type::s8, tag::any),
      bias({1, s.n}, memory::data_type::s32, tag::ab), y({m, s.n}, memory::data_type::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the step's scratch, in the session's arena
  attr.set_output_scales(s.scales.size() > 1 ? 1 << 1 : 0, s.scales);
  if (s.a_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {s.a_zero});
  return {s.has_bias ? dnnl::matmul::desc(a, b, bias, y) : dnnl::matmul::desc(a, b, y), attr, onednn::engine()};
}

class qgemm_kernel final : public kernel {
 public:
  qgemm_kernel(qgemm_spec spec, int8_weight_layouts weights) : spec_(std::move(spec)), weights_(std::move(weights)) {}

  void compute(kernel_context& ctx) override {
    const tensor& a = ctx.input(0);
    const data_type a_type = spec_.a_type == memory::data_type::s8 ? data_type::int8 : data_type::uint8;
    if (a.dtype() != a_type || a.rank() != 2 || a.dim(1) != spec_.k) {
      ctx.fail("A of shape " + to_string(a.shape()) + " is not the " + std::string(ir::to_string(a_type)) + " [M, " +
               std::to_string(spec_.k) + "] matrix B was built for");
    }
    const std::int64_t m = a.dim(0);
    tensor& y = ctx.allocate_output(0, data_type::float32, {m, spec_.n});
    if (m == 0) return;
    const omp_team_for_call team(worthwhile_threads(m * spec_.k * spec_.n, ctx.threads()));  // oneDNN sizes its partition at creation
    primitive& p = primitive_for(ctx, m);
    p.a.set_data_handle(const_cast<void*>(a.raw()));
    p.y.set_data_handle(y.mutable_raw());
    onednn::point_scratchpad(ctx, p.scratch);
    if (spec_.has_bias) {
      const tensor& c = ctx.input(6);
      if (c.dtype() != data_type::int32 || c.element_count() != spec_.n) ctx.fail("C must be " + std::to_string(spec_.n) + " int32 values");
      p.bias.set_data_handle(const_cast<void*>(c.raw()));
    }
    p.run.execute(onednn::stream(), p.args);  // the memories' handles were set above
  }

 private:
  struct primitive {
    std::int64_t m;
    dnnl::matmul run;
    memory a, b, bias, y, scratch;
    std::unordered_map<int, memory> args;  // the memories above, made once
  };

  primitive& primitive_for(const kernel_context& ctx, std::int64_t m) {
    return cache_.find_or_make([&](const primitive& p) { return p.m == m; }, [&] {
      const auto pd = describe_qgemm(spec_, m);
      primitive p{m, dnnl::matmul(pd), memory(pd.src_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  weights_.in(ctx, pd.weights_desc(), onnx_weights_desc()),
                  memory(pd.bias_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  memory(pd.dst_desc(), onednn::engine(), DNNL_MEMORY_NONE),
                  memory(pd.scratchpad_desc(), onednn::engine(), DNNL_MEMORY_NONE), {}};
      p.args = onednn::primitive_args(p.a, p.b, p.y, spec_.has_bias ? &p.bias : nullptr, p.scratch);
      return p;
    });
  }

  /// B's layout in the initializer ([K, N], or [N, K] with transB).
  [[nodiscard]] memory::desc onnx_weights_desc() const {
    using tag = memory::format_tag;
    return {{spec_.k, spec_.n}, memory::data_type::s8, spec_.trans_b ? tag::ba : tag::ab};
  }

  qgemm_spec spec_;
  int8_weight_layouts weights_;
  onednn::recent_primitives<primitive> cache_;

 public:
  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return weights_.holds_own_copy(input); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.bytes(); }
};

std::unique_ptr<kernel> make_qgemm(const kernel_build_info& info) {
  const ir::node& n = info.node;
  const ir::value* b = n.inputs().size() > 3 ? n.input(3) : nullptr;
  if (!b || !b->is_constant() || !b->initializer()->has_data() || b->initializer()->dtype != data_type::int8 ||
      b->initializer()->dims.size() != 2 || !n.input(2)) {
    info.unsupported("QGemm needs a constant int8 matrix B and A's zero point");
  }
  qgemm_spec s;
  s.trans_b = n.attr_int("transB", 0) != 0;
  const auto& dims = b->initializer()->dims;
  s.k = s.trans_b ? dims[1] : dims[0];
  s.n = s.trans_b ? dims[0] : dims[1];
  s.a_type = n.input(2)->elem_type() == data_type::int8 ? memory::data_type::s8 : memory::data_type::u8;
  s.a_zero = scalar_zero_point(info, 2);
  const float a_scale = scalar_scale(info, 1);
  const auto b_scales = constant_scales(n.input(4));
  if (!b_scales || (b_scales->size() != 1 && static_cast<std::int64_t>(b_scales->size()) != s.n)) {
    info.unsupported("b_scale must be one constant or one per column");
  }
  for (const float bs : *b_scales) s.scales.push_back(a_scale * bs);
  if (n.inputs().size() > 5 && n.input(5)) {
    const auto zeros = constant_zero_points(n.input(5));
    if (!zeros || std::any_of(zeros->begin(), zeros->end(), [](std::int32_t z) { return z != 0; })) {
      info.unsupported("b_zero_point must be constant zeros");
    }
  }
  s.has_bias = n.inputs().size() > 6 && n.input(6) != nullptr;
  const auto* weights = reinterpret_cast<const std::int8_t*>(b->initializer()->bytes->data());
  return std::make_unique<qgemm_kernel>(std::move(s), int8_weight_layouts(n, 3, weights));
}

}  // namespace

bool int8_gemm_runs(std::int64_t k, std::int64_t n) {
  if (!int8_kernels_available()) return false;
  try {
    qgemm_spec s;
    s.k = k;
    s.n = n;
    s.scales = {1.0f};
    s.has_bias = true;
    return !onednn::is_reference(describe_qgemm(s, 1).impl_info_str());
  } catch (const std::exception&) {
    return false;
  }
}

void register_int8_gemm_kernels(kernel_registry& r) { r.add(executor_fused_domain, "QGemm", make_qgemm); }

}  // namespace inferopt::runtime::nn
#else
namespace inferopt::runtime::nn {
bool int8_gemm_runs(std::int64_t, std::int64_t) { return false; }
void register_int8_gemm_kernels(kernel_registry&) {}
}  // namespace inferopt::runtime::nn
#endif
