#include "inferopt/prune/permute_units.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

#include "cuttable_constant.hpp"
#include "gather_slices.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "inferopt/prune/prune.hpp"

namespace inferopt::prune {
namespace {

bool touches(const cut_site& s, const channel_analysis& a, std::size_t group) {
  return std::any_of(s.layout.begin(), s.layout.end(), [&](channel_id c) { return a.group_of_channel[static_cast<std::size_t>(c)] == group; });
}

/// For each position of `s`'s layout, the position whose content moves there. A channel may
/// span several positions (a Reshape spreads one over a block of features): its r-th
/// position takes the r-th of the channel that replaces it.
std::vector<std::int64_t> sources_at(const cut_site& s, const channel_analysis& a, std::size_t group, const std::vector<std::size_t>& order) {
  std::unordered_map<channel_id, std::vector<std::int64_t>> positions;
  for (std::size_t p = 0; p < s.layout.size(); ++p) positions[s.layout[p]].push_back(static_cast<std::int64_t>(p));
  const channel_group& g = a.groups[group];
  std::unordered_map<channel_id, std::size_t> seen;
  std::vector<std::int64_t> source(s.layout.size());
  for (std::size_t p = 0; p < s.layout.size(); ++p) {
    const auto c = static_cast<std::size_t>(s.layout[p]);
    source[p] = static_cast<std::int64_t>(p);
    const std::size_t occurrence = seen[s.layout[p]]++;
    if (a.group_of_channel[c] != group) continue;
    const std::vector<channel_id>& here = g.units[a.unit_of_channel[c]].channels;
    const auto k = static_cast<std::size_t>(std::find(here.begin(), here.end(), s.layout[p]) - here.begin());
    const auto from = positions.find(g.units[order[a.unit_of_channel[c]]].channels[k]);
    if (from == positions.end() || from->second.size() != positions[s.layout[p]].size()) {
      throw error(errc::invalid_argument, "permute units: a site of the group holds its units' channels unevenly");
    }
    source[p] = from->second[occurrence];
  }
  return source;
}

/// A site of `group` a reordering cannot move: not a constant's axis, nor a Reshape target
/// (whose sizes it keeps). Null when there is none.
const cut_site* unmovable_site(const channel_analysis& a, std::size_t group) {
  const auto it = std::find_if(a.sites.begin(), a.sites.end(), [&](const cut_site& s) {
    return touches(s, a, group) && s.kind != cut_kind::constant_axis && s.kind != cut_kind::reshape_target;
  });
  return it == a.sites.end() ? nullptr : &*it;
}

void check_permutable(const channel_analysis& a, std::size_t group, const std::vector<std::size_t>& order) {
  const auto refuse = [](const std::string& why) { return error(errc::invalid_argument, "permute units: " + why); };
  if (group >= a.groups.size()) throw refuse("no such group");
  const channel_group& g = a.groups[group];
  if (!g.prunable()) throw refuse("the group is pinned (" + g.pinned_because + ")");
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> identity(g.units.size());
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  if (sorted != identity) throw refuse("the order is not a permutation of the group's units");
  for (const channel_unit& u : g.units) {
    if (u.channels.size() != g.units.front().channels.size()) throw refuse("the group's units differ in width");
  }
  if (const cut_site* s = unmovable_site(a, group)) {
    throw refuse("the group has a site that is not a constant's axis or a Reshape target, at " + s->node->describe());
  }
}

}  // namespace

void permute_units(ir::model& m, const channel_analysis& a, std::size_t group, const std::vector<std::size_t>& order) {
  check_permutable(a, group, order);
  for (const cut_site& s : a.sites) {
    // A Reshape target keeps its sizes: only constants' contents move.
    if (s.kind != cut_kind::constant_axis || !touches(s, a, group)) continue;
    ir::value* v = s.node->input(s.input_index);
    const auto current = cuttable_constant(v, m.ir_version);
    expects(current.has_value(), "a cut site's constant stays cuttable");
    if (!current->data) continue;  // ConstantOfShape: every element equal
    const std::vector<std::int64_t> sources = sources_at(s, a, group, order);
    const ir::tensor moved = gather_slices(*current->data, s.axis, static_cast<std::int64_t>(sources.size()), [&](std::int64_t) { return sources; });
    ir::replace_constant_input(*s.node->owner(), s.node, s.input_index, moved);
  }
}

std::size_t sort_units_by_importance(ir::model& m, const channel_analysis& a, const std::vector<std::vector<double>>& importance) {
  std::size_t reordered_groups = 0;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const channel_group& group = a.groups[g];
    if (!group.prunable() || g >= importance.size() || importance[g].size() != group.units.size()) continue;
    const bool linear = std::all_of(group.sources.begin(), group.sources.end(), [&](std::size_t s) {
      return a.sources[s].producer->is("MatMul") || a.sources[s].producer->is("Gemm");
    });
    if (!linear || unmovable_site(a, g)) continue;
    std::vector<std::size_t> order(group.units.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return importance[g][x] < importance[g][y]; });
    if (std::is_sorted(order.begin(), order.end())) continue;
    permute_units(m, a, g, order);
    ++reordered_groups;
  }
  return reordered_groups;
}

std::size_t sort_units_by_output_energy(ir::model& m, std::span<const runtime::tensor_map> batches) {
  prepare_for_analysis(m);
  channel_analysis_options options;
  options.ignore_defaults = false;  // reordering removes nothing: the last layers may move too
  const channel_analysis a = analyze_channels(m, options);
  return sort_units_by_importance(m, a, output_energy_importance(m, a, batches));
}

}  // namespace inferopt::prune
