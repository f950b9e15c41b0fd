#pragma once
/// `fuse-attention`: the scaled dot-product attention core that torch exports for BERT-family
/// encoders becomes one com.microsoft MultiHeadAttention (docs/FUSED_OPS.md).
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
///   3. M, when present, is float32 of shape [B or 1, N or 1, S, L];
///   4. every value between the projections and O is read only inside the pattern and is not
///      a graph output (the optional no-op Reshape keeps the dims it reads);
///   5. the model imports no com.microsoft opset or version 1.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_attention final : public pattern_pass {
 public:
  fuse_attention();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-attention"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "fuse the scaled dot-product attention core into com.microsoft MultiHeadAttention";
  }
};

}  // namespace inferopt
