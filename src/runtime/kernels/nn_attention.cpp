// com.microsoft MultiHeadAttention (float32), as onnxruntime's contrib op defines it for
// separate query, key and value of shape [B, S, D], [B, L, D] and [B, L, Dv]:
//
//   per batch b and head n:  P = softmax(scale * Q_bn K_bn^T + bias_bn),  O_bn = P V_bn
//
// where Q_bn is columns [n h, (n+1) h) of query[b] (h = D / num_heads), the optional input
// projection bias (input 3, [D + D + Dv]) is added to query, key and value first, the
// optional key_padding_mask (input 4, int32 [B, L], 0 = padding) adds mask_filter_value to
// the padded keys, and the optional attention_bias (input 5, [B or 1, N or 1, S, L]) is added
// to the scaled scores. A row whose scores are all -inf gives NaN, as in onnxruntime.
// Heads run in parallel over B x N; each does two products on strided views of the inputs,
// through the kernels' one GEMM (nn_gemm.hpp: the widest instruction set the CPU has).

#include <Eigen/Core>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "nn_common.hpp"
#include "nn_gemm.hpp"

namespace inferopt::runtime::nn {
namespace {

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The sizes one call works on, read from the inputs' shapes.
struct attention_dims {
  std::int64_t batch, query_len, key_len, hidden, value_hidden, heads, head, value_head;
};

class multi_head_attention_kernel final : public kernel {
 public:
  explicit multi_head_attention_kernel(const kernel_build_info& info)
      : heads_(info.node.attr_int("num_heads", 0)),
        scale_(info.node.find_attribute("scale") ? std::optional(info.node.attr_float("scale", 0.0f)) : std::nullopt),
        mask_filter_(info.node.attr_float("mask_filter_value", -10000.0f)) {
    if (heads_ <= 0) info.fail("attribute 'num_heads' must be positive");
    if (info.node.attr_int("unidirectional", 0) != 0) info.fail("unidirectional attention is not supported");
    for (std::size_t i = 6; i < info.node.inputs().size(); ++i) {
      if (info.node.input(i)) info.fail("past key/value inputs are not supported");
    }
    if (info.node.outputs().size() > 1) info.fail("present key/value outputs are not supported");
  }

  void compute(kernel_context& ctx) override {
    const attention_dims d = read_dims(ctx);
    for (std::size_t i = 0; i < 3; ++i) {
      if (ctx.input(i).dtype() != data_type::float32) ctx.fail("only float32 is supported");
    }
    tensor& out = ctx.allocate_output(0, data_type::float32, {d.batch, d.query_len, d.value_hidden});
    const std::vector<float> key_bias = key_padding_bias(ctx, d);
    const tensor* bias = optional_input(ctx, 5);
    if (bias) check_attention_bias(ctx, *bias, d);
    const operands x = with_projection_bias(ctx, d);
    const float scale = scale_ ? *scale_ : 1.0f / std::sqrt(static_cast<float>(d.head));
    float* o = out.mutable_data<float>();
    detail::parallel_for(ctx.threads(), d.batch * d.heads, 1, [&](std::int64_t lo, std::int64_t hi) {
      matrix scores(d.query_len, d.key_len);
      for (std::int64_t bn = lo; bn < hi; ++bn) {
        const std::int64_t b = bn / d.heads, n = bn % d.heads;
        gemm_args<float> qk;  // scores = scale * Q_bn K_bn^T
        qk.m = d.query_len, qk.n = d.key_len, qk.k = d.head;
        qk.a = x.q + b * d.query_len * d.hidden + n * d.head, qk.lda = d.hidden;
        qk.b = x.k + b * d.key_len * d.hidden + n * d.head, qk.ldb = d.hidden, qk.trans_b = true;
        qk.c = scores.data(), qk.ldc = d.key_len, qk.alpha = scale;
        gemm(qk, 1);
        add_biases(scores, bias, key_bias, b, n, d);
        softmax_rows(scores);
        gemm_args<float> pv;  // O_bn = P V_bn, into the head's columns of the output
        pv.m = d.query_len, pv.n = d.value_head, pv.k = d.key_len;
        pv.a = scores.data(), pv.lda = d.key_len;
        pv.b = x.v + b * d.key_len * d.value_hidden + n * d.value_head, pv.ldb = d.value_hidden;
        pv.c = o + b * d.query_len * d.value_hidden + n * d.value_head, pv.ldc = d.value_hidden;
        gemm(pv, 1);
      }
    });
  }

 private:
  static const tensor* optional_input(const kernel_context& ctx, std::size_t i) {
    return ctx.has_input(i) ? &ctx.input(i) : nullptr;
  }

  attention_dims read_dims(const kernel_context& ctx) const {
    if (!ctx.has_input(1) || !ctx.has_input(2)) ctx.fail("separate key and value inputs are required");
    const shape_t& qs = ctx.input(0).shape();
    const shape_t& ks = ctx.input(1).shape();
    const shape_t& vs = ctx.input(2).shape();
    if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3) ctx.fail("query, key and value must have rank 3");
    attention_dims d{qs[0], qs[1], ks[1], qs[2], vs[2], heads_, 0, 0};
    if (ks[0] != d.batch || vs[0] != d.batch || ks[2] != d.hidden || vs[1] != d.key_len) {
      ctx.fail("query " + to_string(qs) + ", key " + to_string(ks) + " and value " + to_string(vs) + " do not fit");
    }
    if (d.hidden % d.heads != 0 || d.value_hidden % d.heads != 0) ctx.fail("num_heads does not divide the hidden sizes");
    d.head = d.hidden / d.heads;
    d.value_head = d.value_hidden / d.heads;
    return d;
  }

  /// Query, key and value as the products read them: the inputs, or copies with the
  /// projection bias (input 3, [D + D + Dv]) added.
  struct operands {
    const float* q;
    const float* k;
    const float* v;
    std::vector<float> biased;  // owns the copies when there is a bias
  };

  static operands with_projection_bias(const kernel_context& ctx, const attention_dims& d) {
    const tensor& q = ctx.input(0);
    const tensor& k = ctx.input(1);
    const tensor& v = ctx.input(2);
    const tensor* bias = optional_input(ctx, 3);
    if (!bias) return {q.data<float>(), k.data<float>(), v.data<float>(), {}};
    if (bias->dtype() != data_type::float32 || bias->element_count() != 2 * d.hidden + d.value_hidden) {
      ctx.fail("bias must be float32 of " + std::to_string(2 * d.hidden + d.value_hidden) + " values");
    }
    operands x{nullptr, nullptr, nullptr, {}};
    x.biased.resize(static_cast<std::size_t>(q.element_count() + k.element_count() + v.element_count()));
    float* dst = x.biased.data();
    const float* b = bias->data<float>();
    const auto add = [&](const tensor& t, std::int64_t width, const float* row_bias) {
      const float* src = t.data<float>();
      for (std::int64_t i = 0; i < t.element_count(); ++i) dst[i] = src[i] + row_bias[i % width];
      const float* start = dst;
      dst += t.element_count();
      return start;
    };
    x.q = add(q, d.hidden, b);
    x.k = add(k, d.hidden, b + d.hidden);
    x.v = add(v, d.value_hidden, b + 2 * d.hidden);
    return x;
  }

  /// Input 4 as an additive [B, L] bias: mask_filter_value where the mask is 0; empty if absent.
  std::vector<float> key_padding_bias(const kernel_context& ctx, const attention_dims& d) const {
    const tensor* mask = optional_input(ctx, 4);
    if (!mask) return {};
    if (mask->dtype() != data_type::int32 || mask->shape() != shape_t{d.batch, d.key_len}) {
      ctx.fail("key_padding_mask must be int32 of shape [batch, key length]");
    }
    std::vector<float> out(static_cast<std::size_t>(d.batch * d.key_len));
    const std::int32_t* m = mask->data<std::int32_t>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = m[i] == 0 ? mask_filter_ : 0.0f;
    return out;
  }

  static void check_attention_bias(const kernel_context& ctx, const tensor& bias, const attention_dims& d) {
    const shape_t& s = bias.shape();
    if (bias.dtype() != data_type::float32 || s.size() != 4 || (s[0] != 1 && s[0] != d.batch) ||
        (s[1] != 1 && s[1] != d.heads) || s[2] != d.query_len || s[3] != d.key_len) {
      ctx.fail("attention_bias " + to_string(s) + " must be float32 of shape [batch or 1, heads or 1, " +
               std::to_string(d.query_len) + ", " + std::to_string(d.key_len) + "]");
    }
  }

  static void add_biases(matrix& scores, const tensor* bias, const std::vector<float>& key_bias, std::int64_t b,
                         std::int64_t n, const attention_dims& d) {
    if (bias) {
      const shape_t& s = bias->shape();
      const std::int64_t offset = ((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : n)) * d.query_len * d.key_len;
      scores += Eigen::Map<const matrix>(bias->data<float>() + offset, d.query_len, d.key_len);
    }
    if (!key_bias.empty()) scores.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(key_bias.data() + b * d.key_len, d.key_len);
  }

  /// Each row to its softmax; a row of -inf gives NaN (its maximum is -inf).
  static void softmax_rows(matrix& s) {
    for (Eigen::Index r = 0; r < s.rows(); ++r) {
      auto row = s.row(r).array();
      row = (row - row.maxCoeff()).exp();
      row /= row.sum();
    }
  }

  std::int64_t heads_;
  std::optional<float> scale_;
  float mask_filter_;
};

}  // namespace

void register_attention_kernels(kernel_registry& r) {
  r.add("com.microsoft", "MultiHeadAttention", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<multi_head_attention_kernel>(info);
  });
}

}  // namespace inferopt::runtime::nn
