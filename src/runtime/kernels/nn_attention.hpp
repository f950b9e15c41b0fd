#pragma once
// The attention core the attention kernels share (nn_attention.cpp: com.microsoft
// MultiHeadAttention and Attention; nn_attention_onnx.cpp: ai.onnx Attention of opset 23):
// per batch and head, softmax(scale Q K^T + biases) V on strided views of Q, K and V. Private
// to src/runtime/kernels.

#include <cstdint>
#include <vector>

namespace inferopt::runtime::nn {

/// The sizes one call works on, read from the inputs' shapes.
struct attention_dims {
  std::int64_t batch, query_len, key_len, hidden, value_hidden, heads, head, value_head;
};

/// Q, K and V as the products read them: row-major token rows with a row stride each.
struct head_operands {
  const float* q;
  const float* k;
  const float* v;
  std::int64_t q_stride, k_stride, v_stride;
};

/// An additive bias on the scaled scores, [batch, heads, S, L] with batch 1 or B and heads 1
/// or N (broadcast over the others).
struct bias_view {
  const float* data = nullptr;
  std::int64_t batch = 1, heads = 1;
};

/// The additive terms on the scaled scores: padding (mask_filter_value on padded keys, [B, L]
/// or per query [B, S, L]; empty when none) and an attention bias (data null when none).
struct score_biases {
  std::vector<float> padding;
  bool padding_per_query = false;
  bias_view attention_bias;
};

/// The attention of every batch and head into `o` ([B, S, Dv], heads side by side), threads
/// over B x N.
void attend(int threads, const attention_dims& d, const head_operands& x, const score_biases& biases, float scale, float* o);

}  // namespace inferopt::runtime::nn
