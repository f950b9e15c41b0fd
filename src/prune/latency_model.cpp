#include "inferopt/prune/latency_model.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"

namespace inferopt::prune {
namespace {

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

double timed_run(runtime::session& s, const runtime::tensor_map& feeds) {
  const auto start = std::chrono::steady_clock::now();
  (void)s.run(feeds);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// The node's computed inputs, then its outputs: the tensors whose channels scale its work.
std::vector<const ir::value*> touched_values(const ir::node& n) {
  std::vector<const ir::value*> out;
  for (const ir::value* v : n.inputs()) {
    if (v && !v->is_constant()) out.push_back(v);
  }
  for (const ir::value* v : n.outputs()) {
    if (v) out.push_back(v);
  }
  return out;
}

/// Per prunable group, how its units sit on the first of the node's tensors that carries it.
std::vector<timed_node::group_share> shares_of(const channel_analysis& a, const ir::node& n) {
  std::vector<timed_node::group_share> shares;
  std::set<std::size_t> seen;
  for (const ir::value* v : touched_values(n)) {
    auto it = a.value_channels.find(v);
    if (it == a.value_channels.end()) continue;
    std::map<std::size_t, timed_node::group_share> here;
    for (channel_id id : it->second) {
      const std::size_t g = a.group_of_channel[static_cast<std::size_t>(id)];
      if (!a.groups[g].prunable() || seen.count(g)) continue;
      timed_node::group_share& s = here[g];
      s.group = g;
      ++s.positions;
      ++s.per_unit[a.unit_of_channel[static_cast<std::size_t>(id)]];
    }
    for (auto& [g, s] : here) {
      seen.insert(g);
      shares.push_back(std::move(s));
    }
  }
  return shares;
}

}  // namespace

const runtime::tensor_map& largest_batch(std::span<const runtime::tensor_map> batches) {
  if (batches.empty()) throw error(errc::invalid_argument, "latency is timed on a batch, and none was given");
  const auto elements = [](const runtime::tensor_map& b) {
    std::int64_t n = 0;
    for (const auto& [name, x] : b) n += x.element_count();
    return n;
  };
  return *std::max_element(batches.begin(), batches.end(), [&](const auto& x, const auto& y) { return elements(x) < elements(y); });
}

node_timing time_nodes(const ir::model& m, const runtime::tensor_map& feeds, int threads, int runs) {
  if (runs < 1) throw error(errc::invalid_argument, "latency measurement needs at least one run");
  runtime::session s(m, {.threads = threads});
  (void)s.run(feeds);  // warm-up: the memory plan is traced on the first run
  s.set_profiling(true);
  std::map<std::string, std::vector<double>> per_node;
  std::vector<double> totals;
  for (int r = 0; r < runs; ++r) {
    totals.push_back(timed_run(s, feeds));
    for (const auto& [node, ms] : s.node_profile()) per_node[node].push_back(ms);
  }
  node_timing t;
  t.run_ms = median(totals);
  for (auto& [node, times] : per_node) t.node_ms[node] = median(std::move(times));
  return t;
}

latency_comparison compare_latency(runtime::session& reference, runtime::session& candidate, const runtime::tensor_map& feeds,
                                   int rounds) {
  if (rounds < 1) throw error(errc::invalid_argument, "latency comparison needs at least one round");
  (void)reference.run(feeds);
  (void)candidate.run(feeds);
  std::vector<double> ref, cand, ratios;
  for (int r = 0; r < rounds; ++r) {
    ref.push_back(timed_run(reference, feeds));
    cand.push_back(timed_run(candidate, feeds));
    ratios.push_back(ref.back() / std::max(cand.back(), 1e-9));
  }
  return {median(ref), median(cand), median(ratios)};
}

latency_model::latency_model(const channel_analysis& a, const node_timing& timing) : run_ms_(timing.run_ms) {
  group_units_.reserve(a.groups.size());
  for (const channel_group& g : a.groups) group_units_.push_back(g.prunable() ? g.units.size() : 0);
  std::set<const ir::node*> nodes;
  for (const auto& [v, ids] : a.value_channels) {
    if (v->producer()) nodes.insert(v->producer());
    for (const ir::use& u : v->uses()) nodes.insert(u.user);
  }
  for (const ir::node* n : nodes) {
    auto it = timing.node_ms.find(n->label());
    if (it == timing.node_ms.end()) continue;
    timed_node t{n->label(), n->op_type(), it->second, shares_of(a, *n)};
    if (!t.groups.empty()) nodes_.push_back(std::move(t));
  }
  std::sort(nodes_.begin(), nodes_.end(), [](const timed_node& x, const timed_node& y) { return x.node < y.node; });
}

std::vector<std::vector<double>> latency_model::unit_costs() const {
  std::vector<std::vector<double>> costs(group_units_.size());
  for (std::size_t g = 0; g < costs.size(); ++g) costs[g].assign(group_units_[g], 0.0);
  for (const timed_node& n : nodes_) {
    for (const timed_node::group_share& s : n.groups) {
      for (const auto& [unit, positions] : s.per_unit) {
        costs[s.group][unit] += n.ms * static_cast<double>(positions) / static_cast<double>(s.positions);
      }
    }
  }
  return costs;
}

std::vector<double> latency_model::predicted_node_ms(const pruning_plan& plan) const {
  std::vector<std::set<std::size_t>> removed(group_units_.size());
  for (const group_selection& g : plan.groups) removed[g.group].insert(g.removed_units.begin(), g.removed_units.end());
  std::vector<double> out;
  out.reserve(nodes_.size());
  for (const timed_node& n : nodes_) {
    double kept = 1.0;
    for (const timed_node::group_share& s : n.groups) {
      std::int64_t gone = 0;
      for (const auto& [unit, positions] : s.per_unit) {
        if (removed[s.group].count(unit)) gone += positions;
      }
      kept *= 1.0 - static_cast<double>(gone) / static_cast<double>(s.positions);
    }
    out.push_back(n.ms * kept);
  }
  return out;
}

double latency_model::predicted_run_ms(const pruning_plan& plan) const {
  const std::vector<double> after = predicted_node_ms(plan);
  double saved = 0.0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) saved += nodes_[i].ms - after[i];
  return run_ms_ - saved;
}

}  // namespace inferopt::prune
