#pragma once
// A seeded generator of small random transformer encoders for differential testing of the
// transformer fusions: token tensors [B,S,D] (random batch, sequence, heads and head size)
// through 1 to 3 blocks, each drawn from the forms torch exports and their near misses:
//   attention  batch-first SDPA (one 4-D K transpose or dynamo's 3-D sandwich, the scale split
//              over Q and K or after the product as Mul or Div, an additive mask of a shape
//              MultiHeadAttention takes or one it does not, the NaN guard, ts's no-op Reshape)
//              or nn.MultiheadAttention's sequence-first block (packed in-projection, Gemm
//              out-projection, each bias optional);
//   norm       a residual Add (a bias Add before it, the sum read on as pre-LN blocks do) into
//              LayerNormalization, LayerNorm written out, or RMSNorm written out;
//   FFN        MatMul + bias + GELU (written out in the erf or tanh form, the opset-20 op, or
//              QuickGelu) + MatMul + bias.
// Near misses: a scale that is not one element, a mask broadcast over queries, a value of the
// pattern that is also a graph output. Same seed, same model.

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/shape_inference.hpp"

namespace inferopt::test {

class random_transformer_generator {
 public:
  explicit random_transformer_generator(std::uint64_t seed) : rng_(static_cast<std::uint32_t>(seed * 7919 + 3)), seed_(seed) {}

  ir::model make() {
    static constexpr std::int64_t opsets[] = {17, 18, 20, 23};
    opset_ = opsets[pick(4)];
    batch_ = 1 + pick(3), seq_ = 1 + pick(7), heads_ = 1 + pick(4), head_ = 2 * (1 + pick(4));
    hidden_ = heads_ * head_;
    ir::model m = ir::make_model("transformer_" + std::to_string(seed_), opset_);
    ir::graph_builder b(m.graph(), static_cast<std::uint32_t>(seed_ * 2654435761u + 1));
    b_ = &b;
    ir::value* x = b.input("x", ir::data_type::float32, tokens_shape());
    mask_ = chance(0.5) ? make_mask() : nullptr;
    const int blocks = 1 + static_cast<int>(pick(3));
    for (int i = 0; i < blocks; ++i) x = block(x);
    b.output(x);
    b_ = nullptr;
    // Typed outputs; half the models keep value types on intermediates too (dynamo exports
    // do, TorchScript ones do not).
    (void)ir::infer_shapes(m);
    if (chance(0.5)) {
      for (ir::value* v : m.graph().values()) {
        if (!v->is_graph_input() && !v->is_graph_output() && !v->is_initializer()) m.graph().clear_value_info(v);
      }
    }
    return m;
  }

  [[nodiscard]] std::int64_t opset() const noexcept { return opset_; }

 private:
  std::int64_t pick(std::int64_t bound) { return std::uniform_int_distribution<std::int64_t>(0, bound - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  ir::shape tokens_shape() const { return ir::shape{ir::dim{batch_}, ir::dim{seq_}, ir::dim{hidden_}}; }

  static ir::value* shaped(ir::value* v, const std::vector<std::int64_t>& dims) {
    v->set_type(ir::value_type{true, ir::data_type::float32, ir::shape(dims.begin(), dims.end())});
    return v;
  }

  ir::value* number(float v) { return b_->constant("c", {}, {v}); }
  ir::value* transpose(ir::value* x, std::vector<std::int64_t> perm) {
    return b_->op("Transpose", {x}, ir::attribute_list(ir::attribute::make_ints("perm", std::move(perm))));
  }
  ir::value* dense(ir::value* x, std::int64_t in, std::int64_t out, bool bias) {
    ir::value* y = b_->matmul(x, b_->random_constant("w", {in, out}, 1.0f / std::sqrt(static_cast<float>(in))));
    return bias ? b_->add(y, b_->random_constant("b", {out}, 0.2f)) : y;
  }
  void maybe_expose(ir::value* v) {  // a near miss: a value of the pattern read outside it
    if (chance(0.04)) b_->output(v);
  }

  /// An additive mask input of a shape MultiHeadAttention takes ([B|1, 1|N, S, S]) or, rarely,
  /// one it does not ([B, 1, 1, S], broadcast over the queries).
  ir::value* make_mask() {
    std::vector<std::int64_t> dims{chance(0.5) ? batch_ : 1, chance(0.3) ? heads_ : 1, seq_, seq_};
    if (chance(0.15)) dims = {batch_, 1, 1, seq_};
    return b_->input("mask", ir::data_type::float32, ir::shape(dims.begin(), dims.end()));
  }

  ir::value* block(ir::value* x) {
    ir::value* a = chance(0.7) ? batch_first_attention(x) : seq_first_attention(x);
    ir::value* h = residual_norm(a, x);
    ir::value* f = ffn(h);
    return residual_norm(f, h);
  }

  ir::value* heads_of(ir::value* v, std::vector<std::int64_t> perm) {
    return transpose(b_->reshape(v, {batch_, seq_, -1, head_}), std::move(perm));
  }

  /// Softmax(scores [+ mask]) [guarded] times V heads.
  ir::value* weighted_sum(ir::value* scores, ir::value* vh) {
    if (mask_) scores = b_->add(scores, mask_);
    ir::value* p = b_->op("Softmax", {scores}, ir::attribute_list(ir::attribute::make_int("axis", -1)));
    maybe_expose(p);
    if (chance(0.4)) p = b_->op("Where", {b_->op("IsNaN", {p}), b_->constant("zero", {1}, {0.0f}), p});
    return b_->matmul(p, vh);
  }

  /// Q K^T scaled as torch writes it: sqrt(scale) on each side, or the scale after the product.
  ir::value* scores(ir::value* qh, ir::value* kt) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_));
    switch (pick(4)) {
      case 0: return b_->matmul(b_->mul(qh, number(std::sqrt(scale))), b_->mul(kt, number(std::sqrt(scale))));
      case 1: return b_->op("Div", {b_->matmul(qh, kt), number(1.0f / scale)});
      case 2: return b_->mul(b_->matmul(qh, kt), chance(0.1) ? b_->random_constant("s", {seq_}, 0.3f) : number(scale));
      default: return b_->matmul(qh, kt);
    }
  }

  ir::value* batch_first_attention(ir::value* x) {
    const bool bias = chance(0.7);
    ir::value* qh = heads_of(dense(x, hidden_, hidden_, bias), {0, 2, 1, 3});
    ir::value* k = dense(x, hidden_, hidden_, bias);
    ir::value* kt = chance(0.5) ? heads_of(k, {0, 2, 3, 1})
                                : b_->reshape(transpose(b_->reshape(heads_of(k, {0, 2, 1, 3}), {-1, seq_, head_}), {0, 2, 1}),
                                              {batch_, heads_, head_, seq_});
    ir::value* vh = heads_of(dense(x, hidden_, hidden_, bias), {0, 2, 1, 3});
    ir::value* ctx = weighted_sum(scores(qh, kt), vh);
    if (chance(0.3)) ctx = b_->reshape(ctx, {batch_, -1, seq_, head_});  // ts's no-op Reshape
    ir::value* merged = b_->reshape(transpose(ctx, {0, 2, 1, 3}), {batch_, seq_, -1});
    return dense(merged, hidden_, hidden_, bias);
  }

  ir::value* seq_first_heads(ir::value* part, bool key_transposed) {
    ir::value* rows = b_->reshape(part, {seq_, batch_ * heads_, head_});
    if (key_transposed) return b_->reshape(transpose(rows, {1, 2, 0}), {batch_, heads_, head_, seq_});
    return b_->reshape(transpose(rows, {1, 0, 2}), {batch_, heads_, seq_, head_});
  }

  ir::value* seq_first_attention(ir::value* x) {
    ir::value* packed = dense(transpose(x, {1, 0, 2}), hidden_, 3 * hidden_, chance(0.5));
    ir::value* parts = b_->op("Squeeze", {transpose(b_->reshape(packed, {1, seq_, batch_, 3, hidden_}), {3, 1, 2, 0, 4}),
                                          b_->constant_i64("axes", {1}, {3})});
    std::vector<ir::value*> qkv;
    for (std::int64_t i = 0; i < 3; ++i) {
      qkv.push_back(b_->op("Gather", {parts, b_->constant_i64("index", {}, {i})}, ir::attribute_list(ir::attribute::make_int("axis", 0))));
    }
    ir::value* kt = chance(0.5) ? seq_first_heads(qkv[1], true) : transpose(seq_first_heads(qkv[1], false), {0, 1, 3, 2});
    ir::value* ctx = weighted_sum(scores(seq_first_heads(qkv[0], false), kt), seq_first_heads(qkv[2], false));
    ir::value* rows = b_->reshape(transpose(ctx, {2, 0, 1, 3}), {seq_ * batch_, hidden_});
    std::vector<ir::value*> in{rows, b_->random_constant("w_out", {hidden_, hidden_}, 0.3f)};
    if (chance(0.5)) in.push_back(b_->random_constant("b_out", {hidden_}, 0.2f));
    ir::value* projected = b_->op("Gemm", in, ir::attribute_list(ir::attribute::make_int("transB", 1)));
    return transpose(b_->reshape(projected, {seq_, batch_, hidden_}), {1, 0, 2});
  }

  /// Written out over the last axis: LayerNorm (mean-centred) or RMSNorm.
  ir::value* written_norm(ir::value* s, bool rms) {
    const auto mean = [&](ir::value* v) {
      if (opset_ >= 18) return b_->op("ReduceMean", {v, b_->constant_i64("axes", {1}, {-1})});
      return b_->op("ReduceMean", {v}, ir::attribute_list(ir::attribute::make_ints("axes", {-1})));
    };
    ir::value* d = rms ? s : b_->op("Sub", {s, mean(s)});
    ir::value* sq = chance(0.5) ? b_->op("Pow", {d, number(2.0f)}) : b_->mul(d, d);
    ir::value* sd = b_->op("Sqrt", {b_->add(mean(sq), number(1e-5f))});
    ir::value* n = chance(0.5) ? b_->op("Div", {d, sd}) : b_->mul(d, b_->op("Reciprocal", {sd}));
    n = b_->mul(n, b_->random_constant("gamma", {hidden_}, 1.0f));
    return rms ? n : b_->add(n, b_->random_constant("beta", {hidden_}, 0.3f));
  }

  /// y = norm(a [+ bias] + skip); the sum sometimes also feeds the block's output (pre-LN).
  ir::value* residual_norm(ir::value* a, ir::value* skip) {
    if (chance(0.3)) a = b_->add(a, b_->random_constant("bias", {hidden_}, 0.2f));
    ir::value* s = shaped(chance(0.5) ? b_->add(a, skip) : b_->add(skip, a), {batch_, seq_, hidden_});
    ir::value* y = nullptr;
    switch (pick(3)) {
      case 0:
        y = b_->op("LayerNormalization",
                   {s, b_->random_constant("gamma", {hidden_}, 1.0f), b_->random_constant("beta", {hidden_}, 0.3f)},
                   ir::attribute_list(ir::attribute::make_float("epsilon", 1e-5f)));
        break;
      case 1: y = written_norm(s, false); break;
      default: y = written_norm(s, true); break;
    }
    return chance(0.3) ? b_->add(y, s) : y;
  }

  ir::value* gelu(ir::value* h) {
    switch (pick(opset_ >= 20 ? 4 : 3)) {
      case 0: {  // erf, as torch's nn.GELU exports
        ir::value* a = b_->add(b_->op("Erf", {b_->op("Div", {h, number(std::sqrt(2.0f))})}), number(1.0f));
        return b_->mul(b_->mul(h, a), number(0.5f));
      }
      case 1: {  // tanh, GPT-2's gelu_new
        ir::value* inner = b_->add(h, b_->mul(number(0.044715f), b_->op("Pow", {h, number(3.0f)})));
        ir::value* a = b_->add(number(1.0f), b_->tanh(b_->mul(inner, number(0.7978845608f))));
        return b_->mul(b_->mul(h, a), number(0.5f));
      }
      case 2: return b_->mul(h, b_->sigmoid(b_->mul(h, number(1.702f))));  // QuickGelu
      default: return b_->op("Gelu", {h});
    }
  }

  ir::value* ffn(ir::value* x) {
    const std::int64_t inner = 2 * hidden_;
    return dense(gelu(dense(x, hidden_, inner, true)), inner, hidden_, true);
  }

  std::mt19937 rng_;
  std::uint64_t seed_;
  std::int64_t opset_ = 17;
  std::int64_t batch_ = 1, seq_ = 1, heads_ = 1, head_ = 2, hidden_ = 2;
  ir::value* mask_ = nullptr;
  ir::graph_builder* b_ = nullptr;
};

}  // namespace inferopt::test
