#pragma once
/// `fuse-attention`: the scaled dot-product attention core that torch exports for BERT-family
/// encoders becomes one com.microsoft MultiHeadAttention, and ViT's nn.MultiheadAttention block
/// one com.microsoft Attention (docs/FUSED_OPS.md).
///
///   before:  Q, K, V [B,S,D] (the projections, bias included)
///            Qh = Transpose(Reshape(Q, [B,S,N,h]), 0,2,1,3)            [B,N,S,h]
///            Kt = Transpose(Reshape(K, [B,S,N,h]), 0,2,3,1)            [B,N,h,L]
///                 or Reshape(Transpose(Reshape(Kh, [B*N,L,h]), 0,2,1), [B,N,h,L])
///                 with Kh = Transpose(Reshape(K, ...), 0,2,1,3)        (the dynamo export)
///            s  = MatMul(Qh * a, Kt * b), or MatMul(Qh, Kt) * c or / c
///            p  = Softmax(s + M, axis -1)            M: an additive mask, optional
///            p' = Where(IsNaN(p), 0, p)              optional NaN guard (torch's SDPA)
///            O  = Reshape(Transpose([Reshape](MatMul(p', Vh)), 0,2,1,3), [B,S,N*h])
///   after:   O = MultiHeadAttention(Q, K, V, attention_bias = M; num_heads N, scale a*b)
///            (and the guard, when there was one, on O: Where(IsNaN(O), 0, O))
///
/// Algebra: MultiHeadAttention computes per batch and head softmax(scale Q K^T + M) V on the
/// head's columns and writes the heads side by side, which is what the reshapes and
/// transposes spell out. A fully masked row gives NaN in both; the guard on the fused output
/// zeroes exactly the columns of the heads whose probabilities it zeroed before.
///
/// Conditions (each checked in `match`; a declined attention stays as it is):
///   1. the shapes are known (shape inference ran): Q, K, V rank 3 of one float32 type; the
///      head split gives [B,S,N,h] with N and h static and D = N*h; K and V split alike;
///   2. the transposes have the permutations above, the scale factors are one-element
///      constants, the Softmax runs over the last axis;
///   3. M, when present, is float32 of shape [B or 1, N or 1, S, L], or [B or 1, N or 1, 1, L]
///      with S and L static (the classic BERT export's mask, broadcast over the queries): the
///      com.microsoft ops take no such broadcast, so an Expand to [.., S, L] goes before them;
///   4. every value between the projections and O is read only inside the pattern and is not
///      a graph output (the optional no-op Reshape keeps the dims it reads);
///   5. the model imports no com.microsoft opset or version 1 (with `domain=ai.onnx`: it
///      imports ai.onnx 23 or later, and the op is the standard Attention).
/// Projection biases: where Q, K and V are distinct and some are Add(MatMul(..), b) with b a
/// constant [D] read only by the pattern, MultiHeadAttention takes the products and the
/// biases side by side as its bias input (zeros for a projection without one).
///
/// Second form, nn.MultiheadAttention's sequence-first block as ViT exports it:
///   before:  P  = Transpose(x, 1,0,2) W_in (+ b_in)                     [S,B,3D]
///            q, k, v = Gather(Squeeze(Transpose(Reshape(P, [1,S,B,3,D]), 3,1,2,0,4), 3), 0|1|2)
///            Qh = Reshape(Transpose(Reshape(q, [S,B*N,h]), 1,0,2), [B,N,S,h])   (V alike)
///            Kt = Reshape(Transpose(Reshape(k, [S,B*N,h]), 1,2,0), [B,N,h,S])
///                 or Transpose(Kh, 0,1,3,2)
///            the core as above, then Transpose(O_heads, 2,0,1,3) -> Reshape [S*B, D] ->
///            Gemm(W_out, b_out; transB) -> Reshape [S,B,D] -> Transpose(1,0,2) -> y
///   after:   y = Attention(x, W_in, b_in (zeros if none); num_heads N, scale) W_out^T (+ b_out)
/// with the same conditions; W_in and W_out constant, B static.

#include <memory>

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

/// Which ops the fused attention becomes.
struct attention_fusion_options {
  /// `domain=ai.onnx`: the standard Attention of opset 23 (Q, K, V with their biases added
  /// before, q_num_heads = kv_num_heads, the mask as attn_mask), for models importing 23 or
  /// later; the sequence-first block is left to the com.microsoft form.
  bool standard = false;
};

class fuse_attention final : public pattern_pass {
 public:
  fuse_attention();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-attention"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse the scaled dot-product attention core into com.microsoft MultiHeadAttention (or Attention)";
  }
  /// `domain=com.microsoft` (the default) or `domain=ai.onnx`.
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

 private:
  explicit fuse_attention(std::shared_ptr<attention_fusion_options> options);
  std::shared_ptr<attention_fusion_options> options_;
};

}  // namespace inferopt
