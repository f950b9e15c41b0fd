#pragma once
/// Channel dependency analysis: which channels of an ONNX graph must be removed together.
///
/// Every Conv, ConvTranspose, Gemm or MatMul with a constant weight creates channels (its
/// output channels or features). The analysis walks the graph in order and tracks, for every
/// tensor, which created channel sits at each position of its channel axis (its *layout*).
/// Ops that keep channels (BatchNormalization, activations, pools) pass layouts on; Concat
/// joins them and Split cuts them; Flatten and flattening Reshapes spread one channel over a
/// block of features; elementwise ops with several channel-carrying inputs (a residual Add)
/// *couple* the channels at equal positions, so they can only go together. Transformers: a
/// Reshape that splits the channels into [heads, head_dim] couples each head's channels into
/// one unit, the MatMuls of attention (Q K^T, then P V) couple the heads of Q, K and V at
/// equal positions, and the Reshape back to the hidden size spreads each head over its
/// features again, so the output projection's rows are cut with the head. A Softmax over the
/// channels pins them; Shape reads sizes only, which follow the pruned model at run time. Each place that
/// must shrink when a channel goes (an axis of a weight, a bias, BatchNormalization
/// statistics, a per-channel constant, a Reshape's target size, a depthwise Conv's group
/// count, a Split's sizes) is recorded as a *cut site*.
///
/// Coupled channels form one *unit* (what pruning removes), and units that share a channel
/// source or a grouped convolution form one *group*, pruned with one decision. Anything the
/// analysis does not understand pins the channels that reach it: a group with a pinned unit
/// is not pruned. The graph outputs' channels are pinned, so the model's interface never
/// changes.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/model.hpp"

namespace inferopt::prune {

/// Index of a created channel: sources own consecutive ranges.
using channel_id = std::int64_t;

/// The channels one node creates.
struct channel_source {
  const ir::node* producer = nullptr;
  std::int64_t channels = 0;
  channel_id first = 0;  ///< the source's channels are [first, first + channels)
  std::size_t weight_input = 1;  ///< the producer's weight input ...
  std::int64_t weight_axis = 0;  ///< ... and the axis of it that runs over these channels
};

/// What shrinks at a cut site when channels are removed.
enum class cut_kind {
  constant_axis,      ///< one axis of a constant input (weights, bias, BN statistics, ...)
  grouped_input_axis, ///< axis 1 of a grouped Conv's weight: each group keeps its own inputs
  group_attribute,    ///< a depthwise Conv's `group` follows its channel count
  reshape_target,     ///< one entry of a Reshape's constant target shape (`node` may be the
                      ///< Concat an exporter builds the target with: input_index is its piece)
  split_sizes,        ///< a Split's sizes along the channel axis
};

/// One place that shrinks. `layout[p]` is the channel at position p of the cut axis; the
/// positions whose channel is removed are cut.
struct cut_site {
  cut_kind kind = cut_kind::constant_axis;
  ir::node* node = nullptr;
  std::size_t input_index = 0;  ///< the constant input (constant_axis, grouped_input_axis, reshape_target)
  std::int64_t axis = 0;        ///< tensor axis; for reshape_target, the entry of the shape
  std::int64_t groups = 1;      ///< grouped_input_axis: the Conv's group count
  std::vector<channel_id> layout;
  /// split_sizes: where each output's range starts in `layout` (one entry per output).
  std::vector<std::int64_t> segment_starts;
};

/// Channels that can only be removed together (equal positions of coupled tensors).
struct channel_unit {
  std::vector<channel_id> channels;
};

/// Units decided together: those of one source, of coupled sources, of a grouped Conv.
struct channel_group {
  std::vector<std::size_t> sources;  ///< indices into `channel_analysis::sources`
  std::vector<channel_unit> units;
  /// Grouped convolutions need the same number of channels removed from each of their
  /// groups: `chunk_of_unit[u]` is the chunk unit u falls in (empty: no constraint).
  std::vector<std::int64_t> chunk_of_unit;
  std::int64_t chunks = 1;
  /// Empty when the group may be pruned; otherwise why it may not.
  std::string pinned_because;
  [[nodiscard]] bool prunable() const noexcept { return pinned_because.empty(); }
};

struct channel_analysis {
  std::vector<channel_source> sources;
  std::vector<cut_site> sites;
  std::vector<channel_group> groups;
  /// group index of every channel id.
  std::vector<std::size_t> group_of_channel;
  /// unit index (within its group) of every channel id.
  std::vector<std::size_t> unit_of_channel;
  /// The channel at each position of the channel axis of every tensor that carries tracked
  /// channels: how much of a node's work a cut removes (latency_model.hpp).
  std::unordered_map<const ir::value*, std::vector<channel_id>> value_channels;
};

struct channel_analysis_options {
  /// Nodes whose created channels must stay (by node name). The default (`ignore_defaults`)
  /// adds the first Conv of the graph and the last Gemm/MatMul/Conv before an output: the
  /// layers pruning hurts most and saves least.
  std::vector<std::string> ignored_nodes;
  bool ignore_defaults = true;
};

/// Analyses the main graph of `m`. Value types must be known for shape-dependent rules
/// (run `infer-shapes` first); a value of unknown shape pins what reaches it.
[[nodiscard]] channel_analysis analyze_channels(const ir::model& m, const channel_analysis_options& options = {});

/// A readable listing of the groups (`--explain`): for each group, its sources with their
/// channel counts, the cut sites, and why it is pinned when it is.
[[nodiscard]] std::string explain(const channel_analysis& a);

}  // namespace inferopt::prune
