#pragma once
/// Reordering a group's units instead of removing them. Every place that runs over the group's
/// channels is a cut site (channel_groups.hpp), so moving the same units to the same new
/// positions at every site leaves the model's function unchanged: an FFN's neurons move in
/// FFN up's columns and bias and in FFN down's rows together, a head's columns in Q, K and V
/// with its rows in the output projection.
///
/// Block sparsity removes whole r x c blocks of a weight, so which units share a block decides
/// what a block costs. Sorted by importance, the least important units of a layer share
/// blocks and can go together, where in the exporter's order every block holds some that
/// matter.

#include <cstddef>
#include <span>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// Moves unit `order[j]`'s channels to where unit j's were, at every cut site of `group`.
/// `a` must come from `analyze_channels(m)` on this very model, unchanged since.
/// @throws error(errc::invalid_argument) when `order` is not a permutation of the group's
///         units, the group is pinned, its units differ in width, or one of its sites is
///         not a constant's axis or a Reshape target (a Split or a grouped Conv would then
///         see other channels).
void permute_units(ir::model& m, const channel_analysis& a, std::size_t group, const std::vector<std::size_t>& order);

/// Sorts the units of every prunable group whose channels only MatMul/Gemm layers create
/// (transformer FFN neurons and attention heads) by ascending `importance` (`[g][u]`, as
/// unit_importance or output_energy_importance give it); groups with another kind of site are
/// left as they are. Returns the groups reordered. `a` as for permute_units.
std::size_t sort_units_by_importance(ir::model& m, const channel_analysis& a, const std::vector<std::vector<double>>& importance);

/// What block sparsity runs first: `m` prepared for analysis (prepare_for_analysis), then the
/// units of its transformer groups sorted by the output energy they add to their readers on
/// `batches` (output_energy_importance). Returns the groups reordered.
std::size_t sort_units_by_output_energy(ir::model& m, std::span<const runtime::tensor_map> batches);

}  // namespace inferopt::prune
