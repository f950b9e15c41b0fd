#pragma once
// Where a Reshape puts the channel axis of its input, read off the two shapes.
//
// Exporters reshape channels in three ways the channel analysis follows: they move the axis
// while merging or splitting the axes around it ([1, H, S, D] -> [H, S, D], dynamo's key
// transpose), fold it with the axes after it ([N, C, H, W] -> [N, C*H*W], or heads back
// into the hidden size), or split it into [groups, width] ([B, S, hidden] -> [B, S, heads,
// head_dim]). Shapes are compared as expressions (`batch*sequence`), so symbolic batch and
// sequence dims are followed as well as numbers.

#include <cstdint>
#include <optional>

#include "inferopt/ir/node.hpp"
#include "inferopt/ir/symbolic_dim.hpp"

namespace inferopt::prune {

enum class reshape_kind {
  move,   ///< the channel axis keeps its size at `axis`
  fold,   ///< each channel becomes `block` consecutive features of `axis` (the last one)
  split,  ///< `axis` runs over groups of `width` consecutive channels; axis + 1 over the width
};

struct reshape_mapping {
  reshape_kind kind = reshape_kind::move;
  std::size_t axis = 0;
  std::int64_t block = 1;  ///< fold
  std::int64_t width = 1;  ///< split
};

/// How `in`'s `axis` (of `channels` positions) lands in `out`, if it lands whole.
[[nodiscard]] std::optional<reshape_mapping> map_reshape_axis(const ir::sym_shape& in, std::size_t axis,
                                                              std::int64_t channels, const ir::sym_shape& out);

/// One entry of a Reshape's target shape, as far as pruning is concerned.
struct target_entry {
  /// -1, or a 0 that copies the pruned axis: the entry follows the new size by itself.
  bool follows = false;
  /// Otherwise the constant to rewrite: input `input` of `owner` (the Reshape, or the Concat
  /// an exporter builds the target with), element `index` of it.
  const ir::node* owner = nullptr;
  std::size_t input = 0;
  std::int64_t index = 0;
};

/// Entry `entry` of Reshape `n`'s target: a constant, or a Concat (read by `n` alone) of
/// one-element pieces where the piece is a constant. `copies_axis`: a 0 there copies the
/// pruned axis itself. Nothing when the entry is computed.
[[nodiscard]] std::optional<target_entry> reshape_target_entry(const ir::node& n, std::size_t entry, bool copies_axis,
                                                               std::int64_t ir_version);

}  // namespace inferopt::prune
