#include "inferopt/prune/mac_budget.hpp"

#include <numeric>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/prune/latency_model.hpp"

namespace inferopt::prune {

ir::model shaped_copy(const ir::model& m, const runtime::tensor_map& feeds) {
  ir::model copy = m.clone();
  for (ir::value* v : copy.graph().values()) {
    const bool computed = v->origin() == ir::value_origin::node_output;
    if (computed && !v->is_graph_output()) {
      copy.graph().clear_value_info(v);
      continue;
    }
    // A declared output keeps its symbolic dims when inputs are fed: inference fills them.
    if (!v->type() || !v->type()->dims || (computed && !feeds.empty())) continue;
    ir::value_type t = *v->type();
    auto feed = v->is_graph_input() ? feeds.find(v->name()) : feeds.end();
    if (feed != feeds.end() && feed->second.shape().size() == t.dims->size()) {
      for (std::size_t i = 0; i < t.dims->size(); ++i) (*t.dims)[i] = ir::dim(feed->second.shape()[i]);
    } else {
      for (ir::dim& d : *t.dims) {
        if (!d.is_static()) d = ir::dim(std::int64_t{1});
      }
    }
    v->set_type(t);
  }
  (void)ir::infer_shapes(copy);
  return copy;
}

std::map<std::string, double> node_macs_at(const ir::model& m, const runtime::tensor_map& feeds) {
  const ir::model copy = shaped_copy(m, feeds);
  std::map<std::string, double> out;
  for (const ir::node* n : copy.graph().nodes()) {
    const auto macs = ir::node_macs(*n);
    if (macs && *macs > 0) out[n->label()] = static_cast<double>(*macs);
  }
  return out;
}

std::int64_t total_macs(const std::map<std::string, double>& node_macs) {
  return std::accumulate(node_macs.begin(), node_macs.end(), std::int64_t{0},
                         [](std::int64_t sum, const auto& entry) { return sum + static_cast<std::int64_t>(entry.second); });
}

std::int64_t total_macs_at(const ir::model& m, const runtime::tensor_map& feeds) { return total_macs(node_macs_at(m, feeds)); }

std::vector<std::vector<double>> unit_mac_costs(const channel_analysis& a, const std::map<std::string, double>& node_macs) {
  // The latency table's attribution with multiply-adds in place of milliseconds: run_ms,
  // the time outside the nodes, has no counterpart and stays 0.
  return latency_model(a, node_timing{node_macs, 0.0}).unit_costs();
}

}  // namespace inferopt::prune
