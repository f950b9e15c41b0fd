#pragma once
// The constant weights of a Conv or ConvTranspose, opened for folding a per-output-channel
// affine map (y * s[o] + t[o]) into them. Shared by fuse-conv-bn and fuse-conv-mul-add.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/tensor.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt::fusion::detail {

/// The weights and bias of one Conv or ConvTranspose in double, with the layout facts that
/// map an output channel to its weights. Edits change only these copies until `commit`. W's
/// values are read only by `load_weights`: most candidate convs are declined before they are
/// needed, and widening a large W to double is the expensive step.
struct conv_weights {
  ir::node* conv = nullptr;
  const ir::tensor* weight_tensor = nullptr;  ///< never null: the original W, its dtype is kept
  std::vector<double> w;                      ///< W's values, same layout; empty until load_weights
  std::vector<double> bias;                   ///< out_channels values; zeros when there is no B
  bool transpose = false;                     ///< ConvTranspose: W is (C_in, C_out/group, k...)
  std::int64_t group = 1;
  std::int64_t out_channels = 0;
  /// Rank of the conv's output (that of W): batch, channels and the spatial dims.
  [[nodiscard]] std::size_t output_rank() const noexcept { return weight_tensor->dims.size(); }
};

/// `conv`'s weights when it is a default-domain Conv or ConvTranspose with one output, a
/// constant floating W of rank >= 3 whose dims agree with `group`, and a B that is absent or
/// a constant of W's type holding one value per output channel; nullopt otherwise.
[[nodiscard]] std::optional<conv_weights> open_conv_weights(const pass_context& ctx, ir::node* conv);

/// Reads W's values into `c.w` (once). Call before the functions below.
void load_weights(const pass_context& ctx, conv_weights& c);

/// y * scale[o]: multiplies output channel o's weights and bias by scale[o].
/// Precondition: scale.size() == out_channels, W loaded.
void scale_output_channels(conv_weights& c, std::span<const double> scale);

/// y + shift[o]: adds shift[o] to output channel o's bias. Precondition: as above.
void shift_output_channels(conv_weights& c, std::span<const double> shift);

/// Whether every folded value is finite and within the range of W's element type, so that
/// storing it does not overflow (float16 tops out at 65504).
[[nodiscard]] bool fits_weight_type(const conv_weights& c);

/// Stores the folded W and B (W loaded) in W's type, for this conv alone (a W or B other nodes
/// read too is replaced by a copy), and gives the conv a bias input when it had none.
void commit(ir::graph& g, const conv_weights& c);

}  // namespace inferopt::fusion::detail
