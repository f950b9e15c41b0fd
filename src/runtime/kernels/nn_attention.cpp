// com.microsoft MultiHeadAttention and Attention (float32), as onnxruntime's contrib ops
// define them.
//
//   per batch b and head n:  P = softmax(scale * Q_bn K_bn^T + bias_bn),  O_bn = P V_bn
//
// where Q_bn is columns [n h, (n+1) h) of the queries of batch b (h = D / num_heads).
// MultiHeadAttention takes query, key and value [B, S, D], [B, L, D], [B, L, Dv], an optional
// input projection bias (input 3, [D + D + Dv]) added to them first and an optional
// key_padding_mask (input 4, int32 [B, L], 0 = padding). Attention takes the tokens [B, S, Din]
// and packed weights [Din, D + D + Dv] with their bias, computes Q|K|V = input W + bias in one
// product, and takes mask_index (input 3: int32 [B] key lengths, [B, L] or [B, S, L] with 0 =
// padding). Padded keys get mask_filter_value added; both take an attention_bias
// ([B or 1, N or 1, S, L], input 5) added to the scaled scores. A row whose scores are all
// -inf gives NaN, as in onnxruntime.
// Heads run in parallel over B x N; each does two products on strided views of Q, K and V,
// through the kernels' one GEMM (nn_gemm.hpp: the widest instruction set the CPU has).

#include <Eigen/Core>

#include <cmath>
#include <optional>
#include <vector>

#include "nn_attention.hpp"
#include "nn_common.hpp"
#include "nn_constant_product.hpp"
#include "nn_gemm.hpp"
#include "omp_team.hpp"
#include "vector_math.hpp"

namespace inferopt::runtime::nn {
namespace {

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Input `i` (attention_bias of the contrib ops) as a view, after checking its shape; none
/// when absent.
bias_view attention_bias_input(const kernel_context& ctx, std::size_t i, const attention_dims& d) {
  if (!ctx.has_input(i)) return {};
  const tensor& bias = ctx.input(i);
  const shape_t& s = bias.shape();
  if (bias.dtype() != data_type::float32 || s.size() != 4 || (s[0] != 1 && s[0] != d.batch) ||
      (s[1] != 1 && s[1] != d.heads) || s[2] != d.query_len || s[3] != d.key_len) {
    ctx.fail("attention_bias " + to_string(s) + " must be float32 of shape [batch or 1, heads or 1, " +
             std::to_string(d.query_len) + ", " + std::to_string(d.key_len) + "]");
  }
  return {bias.data<float>(), s[0], s[1]};
}

void add_biases(matrix& scores, const score_biases& biases, std::int64_t b, std::int64_t n, const attention_dims& d) {
  if (const bias_view& bias = biases.attention_bias; bias.data) {
    const std::int64_t offset = ((bias.batch == 1 ? 0 : b) * bias.heads + (bias.heads == 1 ? 0 : n)) * d.query_len * d.key_len;
    scores += Eigen::Map<const matrix>(bias.data + offset, d.query_len, d.key_len);
  }
  if (biases.padding.empty()) return;
  if (biases.padding_per_query) {
    scores += Eigen::Map<const matrix>(biases.padding.data() + b * d.query_len * d.key_len, d.query_len, d.key_len);
  } else {
    scores.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(biases.padding.data() + b * d.key_len, d.key_len);
  }
}

const tensor* optional_input(const kernel_context& ctx, std::size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

/// The attributes both ops share.
class attention_kernel_base : public kernel {
 protected:
  attention_kernel_base(const kernel_build_info& info, std::size_t first_past_input)
      : heads_(info.node.attr_int("num_heads", 0)),
        scale_(info.node.find_attribute("scale") ? std::optional(info.node.attr_float("scale", 0.0f)) : std::nullopt),
        mask_filter_(info.node.attr_float("mask_filter_value", -10000.0f)) {
    if (heads_ <= 0) info.fail("attribute 'num_heads' must be positive");
    if (info.node.attr_int("unidirectional", 0) != 0) info.fail("unidirectional attention is not supported");
    for (std::size_t i = first_past_input; i < info.node.inputs().size(); ++i) {
      if (i != 5 && info.node.input(i)) info.fail("past key/value inputs are not supported");
    }
    if (info.node.outputs().size() > 1) info.fail("present key/value outputs are not supported");
  }

  void finish_dims(const kernel_context& ctx, attention_dims& d) const {
    if (d.hidden <= 0 || d.value_hidden <= 0) ctx.fail("the hidden sizes must be positive");
    if (d.key_len <= 0 && d.batch * d.query_len > 0) ctx.fail("there must be at least one key");
    if (d.hidden % heads_ != 0 || d.value_hidden % heads_ != 0) ctx.fail("num_heads does not divide the hidden sizes");
    d.heads = heads_;
    d.head = d.hidden / heads_;
    d.value_head = d.value_hidden / heads_;
  }

  [[nodiscard]] float scale_for(const attention_dims& d) const {
    return scale_ ? *scale_ : 1.0f / std::sqrt(static_cast<float>(d.head));
  }

  /// mask_filter_value where `mask` is 0, 0 elsewhere.
  [[nodiscard]] std::vector<float> padding_from(const tensor& mask) const {
    std::vector<float> out(static_cast<std::size_t>(mask.element_count()));
    const std::int32_t* m = mask.data<std::int32_t>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = m[i] == 0 ? mask_filter_ : 0.0f;
    return out;
  }

  [[nodiscard]] float mask_filter() const { return mask_filter_; }

 private:
  std::int64_t heads_;
  std::optional<float> scale_;
  float mask_filter_;
};

class multi_head_attention_kernel final : public attention_kernel_base {
 public:
  explicit multi_head_attention_kernel(const kernel_build_info& info) : attention_kernel_base(info, 6) {}

  void compute(kernel_context& ctx) override {
    const attention_dims d = read_dims(ctx);
    for (std::size_t i = 0; i < 3; ++i) {
      if (ctx.input(i).dtype() != data_type::float32) ctx.fail("only float32 is supported");
    }
    tensor& out = ctx.allocate_output(0, data_type::float32, {d.batch, d.query_len, d.value_hidden});
    score_biases biases;
    if (const tensor* mask = optional_input(ctx, 4)) {
      if (mask->dtype() != data_type::int32 || mask->shape() != shape_t{d.batch, d.key_len}) {
        ctx.fail("key_padding_mask must be int32 of shape [batch, key length]");
      }
      biases.padding = padding_from(*mask);
    }
    biases.attention_bias = attention_bias_input(ctx, 5, d);
    std::vector<float> biased;
    const head_operands x = with_projection_bias(ctx, d, biased);
    attend(ctx.threads(), d, x, biases, scale_for(d), out.mutable_data<float>());
  }

 private:
  attention_dims read_dims(const kernel_context& ctx) const {
    if (!ctx.has_input(1) || !ctx.has_input(2)) ctx.fail("separate key and value inputs are required");
    const shape_t& qs = ctx.input(0).shape();
    const shape_t& ks = ctx.input(1).shape();
    const shape_t& vs = ctx.input(2).shape();
    if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3) ctx.fail("query, key and value must have rank 3");
    attention_dims d{qs[0], qs[1], ks[1], qs[2], vs[2], 0, 0, 0};
    if (ks[0] != d.batch || vs[0] != d.batch || ks[2] != d.hidden || vs[1] != d.key_len) {
      ctx.fail("query " + to_string(qs) + ", key " + to_string(ks) + " and value " + to_string(vs) + " do not fit");
    }
    finish_dims(ctx, d);
    return d;
  }

  /// The inputs, or copies in `biased` with the projection bias (input 3, [D + D + Dv]) added.
  static head_operands with_projection_bias(const kernel_context& ctx, const attention_dims& d, std::vector<float>& biased) {
    const tensor& q = ctx.input(0);
    const tensor& k = ctx.input(1);
    const tensor& v = ctx.input(2);
    const tensor* bias = optional_input(ctx, 3);
    head_operands x{q.data<float>(), k.data<float>(), v.data<float>(), d.hidden, d.hidden, d.value_hidden};
    if (!bias) return x;
    if (bias->dtype() != data_type::float32 || bias->element_count() != 2 * d.hidden + d.value_hidden) {
      ctx.fail("bias must be float32 of " + std::to_string(2 * d.hidden + d.value_hidden) + " values");
    }
    biased.resize(static_cast<std::size_t>(q.element_count() + k.element_count() + v.element_count()));
    float* dst = biased.data();
    const float* b = bias->data<float>();
    const auto add = [&](const tensor& t, std::int64_t width, const float* row_bias) {
      Eigen::Map<matrix>(dst, t.element_count() / width, width) =
          Eigen::Map<const matrix>(t.data<float>(), t.element_count() / width, width).rowwise() +
          Eigen::Map<const Eigen::RowVectorXf>(row_bias, width);
      const float* start = dst;
      dst += t.element_count();
      return start;
    };
    x.q = add(q, d.hidden, b);
    x.k = add(k, d.hidden, b + d.hidden);
    x.v = add(v, d.value_hidden, b + 2 * d.hidden);
    return x;
  }
};

class packed_attention_kernel final : public attention_kernel_base {
 public:
  explicit packed_attention_kernel(const kernel_build_info& info)
      : attention_kernel_base(info, 4), sizes_(info.node.attr_ints("qkv_hidden_sizes", {})) {
    use_constant_weights(weights_, info.node, 1);
    if (!sizes_.empty() && sizes_.size() != 3) info.fail("qkv_hidden_sizes must have 3 values");
    if (info.node.attr_int("do_rotary", 0) != 0) info.fail("rotary embedding is not supported");
  }

  [[nodiscard]] bool holds_own_copy(std::size_t input) const noexcept override { return input == 1 && weights_.holds_copy(); }
  [[nodiscard]] std::size_t own_bytes() const noexcept override { return weights_.own_bytes(); }

  void compute(kernel_context& ctx) override {
    const tensor& input = ctx.input(0);
    const tensor& weights = weights_.operand(ctx, 1);
    if (input.dtype() != data_type::float32 || weights.dtype() != data_type::float32) ctx.fail("only float32 is supported");
    const attention_dims d = read_dims(ctx, weights);
    const std::int64_t packed = 2 * d.hidden + d.value_hidden, rows = d.batch * d.query_len;
    const auto qkv_buffer = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(rows * packed));
    float* qkv = qkv_buffer.get();
    project(ctx, weights, d, qkv);
    score_biases biases = padding(ctx, d);
    biases.attention_bias = attention_bias_input(ctx, 5, d);
    tensor& out = ctx.allocate_output(0, data_type::float32, {d.batch, d.query_len, d.value_hidden});
    const head_operands x{qkv, qkv + d.hidden, qkv + 2 * d.hidden, packed, packed, packed};
    attend(ctx.threads(), d, x, biases, scale_for(d), out.mutable_data<float>());
  }

 private:
  attention_dims read_dims(const kernel_context& ctx, const tensor& weights) const {
    const shape_t& xs = ctx.input(0).shape();
    const shape_t& ws = weights.shape();
    if (xs.size() != 3 || ws.size() != 2 || ws[0] != xs[2]) {
      ctx.fail("input " + to_string(xs) + " and weights " + to_string(ws) + " do not fit");
    }
    std::int64_t q = ws[1] / 3, v = ws[1] / 3;
    if (!sizes_.empty()) {
      if (sizes_[0] != sizes_[1] || sizes_[0] + sizes_[1] + sizes_[2] != ws[1]) ctx.fail("qkv_hidden_sizes do not fit the weights");
      q = sizes_[0], v = sizes_[2];
    } else if (ws[1] % 3 != 0) {
      ctx.fail("weights' second dim must be divisible by 3");
    }
    attention_dims d{xs[0], xs[1], xs[1], q, v, 0, 0, 0};
    finish_dims(ctx, d);
    return d;
  }

  /// Q|K|V = input W + bias, one [B*S, D + D + Dv] product.
  void project(const kernel_context& ctx, const tensor& weights, const attention_dims& d, float* qkv) {
    const std::int64_t packed = weights.shape()[1], rows = d.batch * d.query_len;
    const tensor* bias = optional_input(ctx, 2);
    if (bias && (bias->dtype() != data_type::float32 || bias->element_count() != packed)) {
      ctx.fail("bias must be float32 of " + std::to_string(packed) + " values");
    }
    const float* x = ctx.input(0).data<float>();
    if (weights_.run(weights.raw(), x, rows, bias ? bias->data<float>() : nullptr, qkv, ctx.threads())) return;
    if (bias) Eigen::Map<matrix>(qkv, rows, packed).rowwise() = Eigen::Map<const Eigen::RowVectorXf>(bias->data<float>(), packed);
    gemm_args<float> p;
    p.m = rows, p.n = packed, p.k = weights.shape()[0];
    p.a = x, p.lda = p.k;
    p.b = weights.raw() ? weights.data<float>() : weights_.plain(), p.ldb = packed;  // released: the product's copy
    p.c = qkv, p.ldc = packed, p.beta = bias ? 1.0f : 0.0f;
    gemm(p, ctx.threads());
  }

  /// mask_index as padding: [B] key lengths (right padding), [B, L] or [B, S, L] (0 = padding).
  score_biases padding(const kernel_context& ctx, const attention_dims& d) const {
    score_biases out;
    const tensor* mask = optional_input(ctx, 3);
    if (!mask) return out;
    const shape_t& s = mask->shape();
    if (mask->dtype() != data_type::int32) ctx.fail("mask_index must be int32");
    if (s == shape_t{d.batch}) {
      out.padding.assign(static_cast<std::size_t>(d.batch * d.key_len), 0.0f);
      const std::int32_t* lengths = mask->data<std::int32_t>();
      for (std::int64_t b = 0; b < d.batch; ++b) {
        for (std::int64_t j = std::max<std::int64_t>(lengths[b], 0); j < d.key_len; ++j) out.padding[b * d.key_len + j] = mask_filter();
      }
    } else if (s == shape_t{d.batch, d.key_len} || s == shape_t{d.batch, d.query_len, d.key_len}) {
      out.padding = padding_from(*mask);
      out.padding_per_query = s.size() == 3;
    } else {
      ctx.fail("mask_index " + to_string(s) + " is not supported: use [batch], [batch, length] or [batch, length, length]");
    }
    return out;
  }

  std::vector<std::int64_t> sizes_;
  constant_weight_product weights_;  // the packed QKV weights, when they are an initializer
};

}  // namespace

void attend(int threads, const attention_dims& d, const head_operands& x, const score_biases& biases, float scale, float* o) {
  const std::int64_t macs = d.batch * d.heads * d.query_len * d.key_len * (d.head + d.value_head);
  detail::parallel_for(worthwhile_threads(macs, threads), d.batch * d.heads, 1, [&](std::int64_t lo, std::int64_t hi) {
    matrix scores(d.query_len, d.key_len);
    for (std::int64_t bn = lo; bn < hi; ++bn) {
      const std::int64_t b = bn / d.heads, n = bn % d.heads;
      gemm_args<float> qk;  // scores = scale * Q_bn K_bn^T
      qk.m = d.query_len, qk.n = d.key_len, qk.k = d.head;
      qk.a = x.q + b * d.query_len * x.q_stride + n * d.head, qk.lda = x.q_stride;
      qk.b = x.k + b * d.key_len * x.k_stride + n * d.head, qk.ldb = x.k_stride, qk.trans_b = true;
      qk.c = scores.data(), qk.ldc = d.key_len, qk.alpha = scale;
      gemm(qk, 1);
      add_biases(scores, biases, b, n, d);
      softmax_rows(scores.data(), d.query_len, d.key_len, d.key_len);
      gemm_args<float> pv;  // O_bn = P V_bn, into the head's columns of the output
      pv.m = d.query_len, pv.n = d.value_head, pv.k = d.key_len;
      pv.a = scores.data(), pv.lda = d.key_len;
      pv.b = x.v + b * d.key_len * x.v_stride + n * d.value_head, pv.ldb = x.v_stride;
      pv.c = o + b * d.query_len * d.value_hidden + n * d.value_head, pv.ldc = d.value_hidden;
      gemm(pv, 1);
    }
  });
}

void register_attention_kernels(kernel_registry& r) {
  r.add("com.microsoft", "MultiHeadAttention", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<multi_head_attention_kernel>(info);
  });
  r.add("com.microsoft", "Attention", [](const kernel_build_info& info) -> std::unique_ptr<kernel> {
    return std::make_unique<packed_attention_kernel>(info);
  });
}

}  // namespace inferopt::runtime::nn
