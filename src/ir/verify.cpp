#include "inferopt/ir/verify.hpp"

#include <unordered_map>
#include <unordered_set>

namespace inferopt::ir {
namespace {

bool is_visible_from(const graph& scope, const value* v) {
  for (const graph* g = &scope; g; g = g->parent()) {
    if (v->owner() == g) return true;
  }
  return false;
}

/// The node of `outer` that contains `n`.
const node* enclosing(const graph& outer, const node* n) {
  while (n && n->owner() != &outer) n = n->owner()->parent_node();
  return n;
}

struct checker {
  std::vector<std::string> problems;

  void add(const graph& g, const std::string& what) {
    problems.push_back((g.parent() ? "subgraph '" + g.name() + "': " : std::string()) + what);
  }

  void check(const graph& g) {
    std::unordered_set<const node*> done;
    // Positions of nodes in every enclosing graph, for "defined before use" across scopes.
    for (node* n : g.nodes()) {
      for (std::size_t i = 0; i < n->inputs().size(); ++i) check_input(g, n, i, done);
      for (std::size_t i = 0; i < n->outputs().size(); ++i) {
        value* out = n->outputs()[i];
        if (!out) continue;
        if (out->is_dead() || out->producer() != n || out->producer_output() != i || out->owner() != &g) {
          add(g, "node " + n->describe() + ": output '" + out->name() + "' does not record this node as its producer");
        }
        if (g.find_value(out->name()) != out) {
          add(g, "node " + n->describe() + ": output '" + out->name() + "' is defined twice");
        }
      }
      for (graph* sub : n->subgraphs()) {
        if (sub->parent() != &g || sub->parent_node() != n) {
          add(g, "node " + n->describe() + ": subgraph '" + sub->name() + "' does not point back to its node");
        }
        check(*sub);
      }
      done.insert(n);
    }
    for (value* v : g.values()) {
      for (const use& u : v->uses()) {
        if (!u.user || u.user->is_dead() || u.input_index >= u.user->inputs().size() ||
            u.user->inputs()[u.input_index] != v) {
          add(g, "value '" + v->name() + "': its use list names a node that does not read it");
        }
      }
      if (v->origin() == value_origin::node_output && (!v->producer() || v->producer()->is_dead())) {
        add(g, "value '" + v->name() + "': its producer was removed");
      }
    }
    for (value* out : g.outputs()) {
      if (out->is_dead() || !is_visible_from(g, out)) {
        add(g, "graph output '" + out->name() + "' is not defined");
      } else if (out->origin() == value_origin::undefined) {
        add(g, "graph output '" + out->name() + "' is not defined");
      }
    }
  }

  void check_input(const graph& g, node* n, std::size_t i, const std::unordered_set<const node*>& done) {
    value* in = n->inputs()[i];
    if (!in) return;
    const std::string where = "node " + n->describe() + ": input '" + in->name() + "'";
    if (in->is_dead()) {
      add(g, where + " was removed");
      return;
    }
    if (!is_visible_from(g, in)) {
      add(g, where + " belongs to a graph that does not enclose this node");
      return;
    }
    if (in->origin() == value_origin::undefined) {
      add(g, where + " is not defined");
      return;
    }
    bool listed = false;
    for (const use& u : in->uses()) listed = listed || (u.user == n && u.input_index == i);
    if (!listed) add(g, where + ": the value's use list misses this node");
    if (in->origin() != value_origin::node_output) return;
    if (in->owner() == &g) {
      if (!done.count(in->producer())) add(g, where + " is used before its producer runs (not in topological order)");
      return;
    }
    // An outer value: its producer must come before the node that holds this subgraph.
    const node* holder = enclosing(*in->owner(), n);
    const graph& outer = *in->owner();
    for (node* m : outer.nodes()) {
      if (m == holder) {
        add(g, where + " refers to an outer value produced after the subgraph's node");
        return;
      }
      if (m == in->producer()) return;
    }
  }
};

}  // namespace

std::vector<std::string> find_problems(const graph& g) {
  checker c;
  c.check(g);
  return c.problems;
}

void verify(const graph& g) {
  auto problems = find_problems(g);
  if (!problems.empty()) throw error(errc::verification, problems.front());
}

}  // namespace inferopt::ir
