#include "inferopt/ir/rewriting.hpp"

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"

namespace inferopt::ir {
bool can_take_output_name(const graph& g, const value* in, const value* out) {
  const std::string& name = out->name();
  // Every check `graph::rename` makes, made before any edit: a declined bypass leaves the
  // graph as it was (only `out` itself may hold the name in this graph).
  return in->owner() == &g && in->origin() == value_origin::node_output && !in->is_graph_output() &&
         !(g.parent() && g.parent()->resolve(name)) && !g.defined_in_subgraphs(name);
}

bypass_result can_bypass(const graph& g, const node* n, std::size_t in_index, std::size_t out_index) {
  const value* in = n->input(in_index);
  const value* out = n->output(out_index);
  expects(in != nullptr && out != nullptr, "bypass: the node has no such input or output");
  if (!out->is_graph_output() || can_take_output_name(g, in, out)) return bypass_result::removed;
  return bypass_result::output_name_conflict;
}

bypass_result bypass(graph& g, node* n, std::size_t in_index, std::size_t out_index) {
  value* in = n->input(in_index);
  value* out = n->output(out_index);
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

bool can_forward_past(const graph& g, const node* n, const value* in) {
  const value* out = n->output(0);
  return out && (!out->is_graph_output() || can_take_output_name(g, in, out));
}

void forward_past(graph& g, node* n, value* in) {
  // bypass forwards an input slot; pointing slot 0 at `in` first lets it do the rest (types,
  // value_info, the output name) exactly as for an Identity.
  g.set_input(n, 0, in);
  const bypass_result r = bypass(g, n, 0, 0);
  expects(r == bypass_result::removed, "forward_past: the caller did not check can_forward_past");
}

bool erase_if_unread(graph& g, node* n) {
  for (const value* out : n->outputs()) {
    if (out && (out->has_uses() || out->is_graph_output())) return false;
  }
  g.erase(n);
  return true;
}

node* sole_user(const value* v) noexcept {
  if (!v || v->is_graph_output() || v->uses().size() != 1) return nullptr;
  return v->uses().front().user;
}

value* set_constant_input(graph& g, node* n, std::size_t index, tensor t, std::string_view base) {
  value* v = g.add_initializer(g.unique_name(base), std::move(t));
  g.set_input(n, index, v);
  return v;
}

value* own_constant_input(graph& g, node* n, std::size_t index) {
  value* v = n->input(index);
  expects(v != nullptr && v->is_initializer(), "own_constant_input: the input is not an initializer");
  if (sole_user(v) == n) return v;  // editing it in place changes `n` alone
  value* copy = set_constant_input(g, n, index, *v->initializer(), v->name());
  if (v->type()) copy->set_type(v->type());
  return copy;
}

value* replace_constant_input(graph& g, node* n, std::size_t index, tensor t) {
  value* v = own_constant_input(g, n, index);
  if (v->type()) {
    value_type type = *v->type();
    type.elem_type = t.dtype;
    type.dims = shape(t.dims.begin(), t.dims.end());
    v->set_type(std::move(type));
  }
  v->owner()->set_initializer(v, std::move(t));
  return v;
}

bool is_identity_of_constant(const node& n, std::int64_t ir_version) noexcept {
  return n.is("Identity") && n.inputs().size() == 1 && n.outputs().size() == 1 && n.input(0) && n.output(0) &&
         is_constant(*n.input(0), ir_version);
}

void forward_constant(graph& g, node* n, std::size_t in_index, std::size_t out_index) {
  value* in = n->input(in_index);
  value* out = n->output(out_index);
  expects(in != nullptr && out != nullptr && in->is_initializer(), "forward_constant: the input is not an initializer");
  g.replace_uses_except_outputs(out, in);
  if (!out->is_graph_output()) {
    g.erase(n);
    return;
  }
  const std::string name = out->name();
  value* copy = g.add_initializer(g.unique_name(name), *in->initializer());
  g.replace_all_uses(out, copy);
  g.erase(n);
  g.rename(copy, name);
}

void trim_omitted_inputs(graph& g) {
  for (node* n : g.nodes()) {
    g.trim_omitted_inputs(n);
    for (graph* sub : n->subgraphs()) trim_omitted_inputs(*sub);
  }
}

}  // namespace inferopt::ir
