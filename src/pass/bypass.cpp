#include "inferopt/pass/detail/bypass.hpp"

namespace inferopt::detail {
namespace {

/// Whether a subgraph nested in `g` defines `name` (taking it would shadow that value).
bool defined_below(const ir::graph& g, const std::string& name) {
  for (ir::node* n : g.nodes()) {
    for (ir::graph* sub : n->subgraphs()) {
      if (sub->find_value(name) || defined_below(*sub, name)) return true;
    }
  }
  return false;
}

}  // namespace

bool can_take_output_name(const ir::graph& g, const ir::value* in, const ir::value* out) {
  const std::string& name = out->name();
  // Every check `graph::rename` makes, made before any edit: a declined bypass leaves the
  // graph as it was (only `out` itself may hold the name in this graph).
  return in->owner() == &g && in->origin() == ir::value_origin::node_output && !in->is_graph_output() &&
         !(g.parent() && g.parent()->resolve(name)) && !defined_below(g, name);
}

bypass_result can_bypass(const ir::graph& g, const ir::node* n, std::size_t in_index, std::size_t out_index) {
  const ir::value* in = n->input(in_index);
  const ir::value* out = n->output(out_index);
  expects(in != nullptr && out != nullptr, "bypass: the node has no such input or output");
  if (!out->is_graph_output() || can_take_output_name(g, in, out)) return bypass_result::removed;
  return bypass_result::output_name_conflict;
}

bypass_result bypass(ir::graph& g, ir::node* n, std::size_t in_index, std::size_t out_index) {
  ir::value* in = n->input(in_index);
  ir::value* out = n->output(out_index);
  if (const bypass_result r = can_bypass(g, n, in_index, out_index); r != bypass_result::removed) return r;
  if (!out->is_graph_output()) {
    g.replace_all_uses(out, in);
    g.erase(n);
    return bypass_result::removed;
  }
  const std::string name = out->name();
  if (!in->type() && out->type()) in->set_type(out->type());
  g.replace_all_uses(out, in);
  g.erase(n);
  g.clear_value_info(in);  // it is a graph output now, described by the output list
  g.rename(in, name);
  return bypass_result::removed;
}

}  // namespace inferopt::detail
