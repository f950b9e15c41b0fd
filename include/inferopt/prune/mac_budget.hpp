#pragma once
/// Multiply-adds at the shapes of one batch, and the share of them each prunable unit takes:
/// the budget of global pruning when `--ratio` should be a share of the FLOPs at a length
/// users serve at rather than of the weights.
///
/// Weights miss the products of two computed tensors. An attention head takes, besides its
/// slices of the Q, K, V and output projections, its share of Q K^T and of the weighted sum
/// of V, which grow with the sequence: at 128 tokens they add a sixth to a MiniLM head's
/// cost, and a weight budget that reads 30% fewer ends near 29.7% fewer FLOPs.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// A copy of `m` whose graph inputs have the shapes of `feeds` and whose intermediate shapes
/// are inferred again from there. Inputs without a feed keep their static dims; their
/// symbolic ones (a batch) become 1, so an empty `feeds` counts one sample.
[[nodiscard]] ir::model shaped_copy(const ir::model& m, const runtime::tensor_map& feeds);

/// Every node's multiply-adds (ir::node_macs) in shaped_copy(m, feeds), by
/// ir::node::label(); nodes whose shapes stay unknown are left out.
[[nodiscard]] std::map<std::string, double> node_macs_at(const ir::model& m, const runtime::tensor_map& feeds);

/// The sum of a node_macs_at table.
[[nodiscard]] std::int64_t total_macs(const std::map<std::string, double>& node_macs);

/// total_macs(node_macs_at(m, feeds)).
[[nodiscard]] std::int64_t total_macs_at(const ir::model& m, const runtime::tensor_map& feeds);

/// `[g][u]`: the multiply-adds of `node_macs` (node_macs_at of the model `a` was computed
/// on) that removing unit u of prunable group g saves (0 for pinned groups). A node's count
/// scales with the kept share of every group whose channels it touches, as the latency
/// table takes a node's time to (latency_model.hpp).
[[nodiscard]] std::vector<std::vector<double>> unit_mac_costs(const channel_analysis& a,
                                                              const std::map<std::string, double>& node_macs);

}  // namespace inferopt::prune
