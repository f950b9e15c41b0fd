#pragma once
// What the attention patterns share (fuse_attention.cpp: torch's batch-first SDPA core into
// MultiHeadAttention; attention_seq_first.cpp: nn.MultiheadAttention's sequence-first block
// with its packed projection into Attention): the walk from the Softmax back to Q and K and
// forward to the weighted sum of V, with the head splits of both layouts, and the clean-up.
// Private to src/fusion.

#include <memory>
#include <optional>
#include <vector>

#include "inferopt/fusion/fuse_attention.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/pass/pass.hpp"
#include "inferopt/pass/rewrite_pattern.hpp"

namespace inferopt::fusion::detail {

using decline = const char*;

/// Where the batch and sequence dims sit in the values the heads are split from:
/// [B, S, D] (batch-first) or [S, B, D] (sequence-first).
enum class token_layout { batch_first, seq_first };

/// An attention core found at a Softmax: the values the fused op takes, and the nodes it
/// replaces.
struct attention_match {
  ir::value* q = nullptr;  ///< [B,S,D] or [S,B,D]: before the head split
  ir::value* k = nullptr;
  ir::value* v = nullptr;
  ir::value* mask = nullptr;        ///< additive, [B|1, N|1, S|1, L]; null when none
  /// The static dims [B|1, N|1, S, L] a mask broadcast over the queries ([.., 1, L], as the
  /// classic BERT export's Cast-Sub-Mul chain gives) is expanded to for the com.microsoft
  /// ops, which take no such broadcast; empty when the mask needs none.
  std::vector<std::int64_t> mask_expand;
  ir::value* guard_zero = nullptr;  ///< the NaN guard's 0; null when there is no guard
  ir::value* heads_out = nullptr;   ///< MatMul(p, Vh): [B, N, S, h]
  std::int64_t heads = 0;
  double scale = 1.0;
  std::vector<ir::node*> replaced;  ///< every node the fused one replaces
  /// Shape nodes reading values of the pattern: allowed when all they feed is the shape
  /// input of the pattern's own reshapes (the dynamic exports compute those shapes so).
  std::vector<ir::node*> shape_readers;
};

[[nodiscard]] const ir::shape* dims_of(const ir::value* v);
/// Two dims known (a number or a name) and equal.
[[nodiscard]] bool same_dim(const ir::dim& a, const ir::dim& b);
[[nodiscard]] bool is_node(const ir::node* n, const char* op, std::size_t inputs);
[[nodiscard]] bool has_perm(const ir::node* n, const std::vector<std::int64_t>& perm);

/// The producer of `v` when `v` is read only by `reader` (Shape readers aside, recorded in
/// `m`) and is not a graph output; else null.
[[nodiscard]] ir::node* private_producer(const ir::value* v, const ir::node* reader, attention_match& m);
/// The one reader of `v` that is not a Shape node, when `v` is read only so; else null.
[[nodiscard]] ir::node* only_reader(const ir::value* v, attention_match& m);

/// Softmax input back to Q and K (the scale on either side or after the product, the
/// additive mask, the head splits in `layout`), then forward to heads_out (the optional NaN
/// guard, the V product and V's split). Fills `m` or says why not.
[[nodiscard]] decline read_attention_core(const pass_context& ctx, ir::node& softmax, token_layout layout,
                                          attention_match& m);

/// The types (float32) and the mask's shape, [B or 1, N or 1, S, L], or [.., 1, L] with S and
/// L static (then fills mask_expand).
[[nodiscard]] decline check_operands(attention_match& m, token_layout layout);

/// The mask as the com.microsoft ops take it: m.mask, or an Expand of it (before `position`)
/// to mask_expand; null when there is no mask.
[[nodiscard]] ir::value* microsoft_mask(ir::graph& g, const attention_match& m, ir::node* position);

/// The shape arithmetic the Shape readers feed, when all of it ends in the shape input of a
/// Reshape the match replaces or `extra_sink`: added to `replaced`, since it dies with the
/// pattern. False when it reaches anything else.
[[nodiscard]] bool absorb_shape_readers(attention_match& m, const ir::node* extra_sink);

/// Erases the replaced nodes that nothing reads any longer.
void erase_replaced(ir::graph& g, const std::vector<ir::node*>& replaced);

/// nn.MultiheadAttention's sequence-first block, its packed input projection and its output
/// projection, into com.microsoft Attention and a MatMul (attention_seq_first.cpp).
/// Silent while `options` ask for the standard op.
[[nodiscard]] std::unique_ptr<rewrite_pattern> make_seq_first_attention_pattern(
    std::shared_ptr<const attention_fusion_options> options);

}  // namespace inferopt::fusion::detail
