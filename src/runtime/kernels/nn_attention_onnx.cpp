// ai.onnx Attention (opset 23), float32, in the form fuse-attention writes: Q [B,S,Dq],
// K [B,L,Dk], V [B,L,Dv] with q_num_heads = kv_num_heads = N, and an optional attn_mask
// broadcast to [B, N, S, L]: float (added to the scaled scores) or bool (true: attend; false:
// -inf). Y is [B, S, Dv]. The 4-D head-split inputs, grouped-query heads, past key/value,
// causal masking, softcap and the qk output modes are refused with one line. The core is the
// one the com.microsoft attention ops run (nn_attention.hpp).

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernel_util.hpp"
#include "nn_attention.hpp"
#include "nn_common.hpp"

namespace inferopt::runtime::nn {
namespace {

class onnx_attention_kernel final : public kernel {
 public:
  explicit onnx_attention_kernel(const kernel_build_info& info)
      : q_heads_(info.node.attr_int("q_num_heads", 0)), kv_heads_(info.node.attr_int("kv_num_heads", 0)),
        scale_(info.node.find_attribute("scale") ? std::optional(info.node.attr_float("scale", 0.0f)) : std::nullopt) {
    const ir::node& n = info.node;
    if (q_heads_ <= 0 || q_heads_ != kv_heads_) info.unsupported("only 3-D inputs with q_num_heads = kv_num_heads > 0 are supported");
    if (n.attr_int("is_causal", 0) != 0) info.unsupported("causal attention is not supported");
    if (n.attr_float("softcap", 0.0f) != 0.0f) info.unsupported("softcap is not supported");
    if (n.attr_int("qk_matmul_output_mode", 0) != 0) info.unsupported("qk_matmul_output_mode is not supported");
    for (std::size_t i = 4; i < n.inputs().size(); ++i) {
      if (n.input(i)) info.unsupported("past key/value and nonpad_kv_seqlen inputs are not supported");
    }
    for (std::size_t i = 1; i < n.outputs().size(); ++i) {
      if (n.output(i)) info.unsupported("present key/value and qk outputs are not supported");
    }
  }

  void compute(kernel_context& ctx) override {
    for (std::size_t i = 0; i < 3; ++i) {
      if (ctx.input(i).dtype() != data_type::float32) ctx.fail("only float32 is supported");
    }
    const attention_dims d = read_dims(ctx);
    score_biases biases;
    std::vector<float> mask;
    if (ctx.has_input(3)) biases.attention_bias = additive_mask(ctx, d, mask);
    tensor& out = ctx.allocate_output(0, data_type::float32, {d.batch, d.query_len, d.value_hidden});
    if (out.element_count() == 0) return;
    const head_operands x{ctx.input(0).data<float>(), ctx.input(1).data<float>(), ctx.input(2).data<float>(),
                          d.hidden, d.hidden, d.value_hidden};
    const float scale = scale_ ? *scale_ : 1.0f / std::sqrt(static_cast<float>(d.head));
    attend(ctx.threads(), d, x, biases, scale, out.mutable_data<float>());
  }

 private:
  attention_dims read_dims(const kernel_context& ctx) const {
    const shape_t& qs = ctx.input(0).shape();
    const shape_t& ks = ctx.input(1).shape();
    const shape_t& vs = ctx.input(2).shape();
    if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3) ctx.fail("only 3-D query, key and value are supported");
    if (ks[0] != qs[0] || vs[0] != qs[0] || ks[2] != qs[2] || vs[1] != ks[1]) {
      ctx.fail("query " + to_string(qs) + ", key " + to_string(ks) + " and value " + to_string(vs) + " do not fit");
    }
    if (qs[2] <= 0 || vs[2] <= 0 || qs[2] % q_heads_ != 0 || vs[2] % q_heads_ != 0) {
      ctx.fail("the heads do not divide the hidden sizes " + std::to_string(qs[2]) + " and " + std::to_string(vs[2]));
    }
    if (ks[1] <= 0 && qs[0] * qs[1] > 0) ctx.fail("there must be at least one key");
    return {qs[0], qs[1], ks[1], qs[2], vs[2], q_heads_, qs[2] / q_heads_, vs[2] / q_heads_};
  }

  /// attn_mask broadcast (right-aligned, numpy-style) to [b, n, S, L] with b in {1, B} and n in
  /// {1, N}, as an additive float bias in `storage`.
  static bias_view additive_mask(const kernel_context& ctx, const attention_dims& d, std::vector<float>& storage) {
    const tensor& m = ctx.input(3);
    shape_t s = m.shape();
    const bool boolean = m.dtype() == data_type::boolean;
    if (!boolean && m.dtype() != data_type::float32) ctx.fail("attn_mask must be bool or float32");
    if (s.size() > 4) ctx.fail("attn_mask must have rank 4 or less");
    while (s.size() < 4) s.insert(s.begin(), 1);
    const shape_t full{d.batch, d.heads, d.query_len, d.key_len};
    for (std::size_t k = 0; k < 4; ++k) {
      if (s[k] != 1 && s[k] != full[k]) ctx.fail("attn_mask " + to_string(m.shape()) + " does not broadcast to " + to_string(full));
    }
    const std::int64_t b = s[0], n = s[1];
    storage.resize(static_cast<std::size_t>(b * n * d.query_len * d.key_len));
    const std::int64_t st_l = s[3] == 1 ? 0 : 1, st_s = s[2] == 1 ? 0 : s[3], st_n = s[2] * s[3], st_b = s[1] * st_n;
    std::size_t at = 0;
    for (std::int64_t i0 = 0; i0 < b; ++i0) {
      for (std::int64_t i1 = 0; i1 < n; ++i1) {
        for (std::int64_t i = 0; i < d.query_len; ++i) {
          for (std::int64_t j = 0; j < d.key_len; ++j, ++at) {
            const std::int64_t src = i0 * st_b + i1 * st_n + i * st_s + j * st_l;
            storage[at] = boolean ? (m.data<bool>()[src] ? 0.0f : -std::numeric_limits<float>::infinity()) : m.data<float>()[src];
          }
        }
      }
    }
    return {storage.data(), b, n};
  }

  std::int64_t q_heads_, kv_heads_;
  std::optional<float> scale_;
};

}  // namespace

void register_onnx_attention_kernels(kernel_registry& r) {
  r.add(
      "", "Attention",
      [](const kernel_build_info& info) -> std::unique_ptr<kernel> { return std::make_unique<onnx_attention_kernel>(info); },
      23);
}

}  // namespace inferopt::runtime::nn
