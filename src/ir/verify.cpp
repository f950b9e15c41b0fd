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

/// Hashes a use, so that use lists can be checked against node inputs in linear time.
struct use_hash {
  std::size_t operator()(const use& u) const noexcept {
    return std::hash<const void*>{}(u.user) ^ (std::hash<std::size_t>{}(u.input_index) * 0x9e3779b97f4a7c15ULL);
  }
};

/// Every check is linear in the size of the graph: a node with 50,000 inputs reading one
/// value must not cost 50,000 scans of that value's use list.
struct checker {
  std::vector<std::string> problems;
  std::unordered_map<const value*, std::size_t> reads;  // node input slots per value, every graph
  std::unordered_map<const graph*, std::unordered_map<const node*, std::size_t>> positions;

  void add(const graph& g, const std::string& what) {
    problems.push_back((g.parent() ? "subgraph '" + g.name() + "': " : std::string()) + what);
  }

  void check(const graph& g) {
    std::unordered_set<const node*> done;
    for (node* n : g.nodes()) {
      for (std::size_t i = 0; i < n->inputs().size(); ++i) {
        if (check_input(g, n, i, done)) ++reads[n->inputs()[i]];
      }
      check_outputs(g, n);
      for (graph* sub : n->subgraphs()) {
        if (sub->parent() != &g || sub->parent_node() != n) {
          add(g, "node " + n->describe() + ": subgraph '" + sub->name() + "' does not point back to its node");
        }
        check(*sub);
      }
      done.insert(n);
    }
    for (value* v : g.values()) check_value(g, v);
    for (value* out : g.outputs()) {
      if (out->is_dead() || !is_visible_from(g, out) || out->origin() == value_origin::undefined) {
        add(g, "graph output '" + out->name() + "' is not defined");
      }
    }
  }

  void check_outputs(const graph& g, node* n) {
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
  }

  /// Each use must name a live node slot that reads `v`, once; then the use list covers
  /// every slot exactly when it is as long as the slots reading `v`. Subgraphs are checked
  /// before their graph's values, so `reads` already counts their slots.
  void check_value(const graph& g, value* v) {
    std::unordered_set<use, use_hash> seen;
    for (const use& u : v->uses()) {
      if (!u.user || u.user->is_dead() || u.input_index >= u.user->inputs().size() ||
          u.user->inputs()[u.input_index] != v || !seen.insert(u).second) {
        add(g, "value '" + v->name() + "': its use list names a node that does not read it");
        return;
      }
    }
    const auto counted = reads.find(v);
    if (seen.size() < (counted == reads.end() ? 0 : counted->second)) report_missing_use(g, v);
    if (v->origin() == value_origin::node_output && (!v->producer() || v->producer()->is_dead())) {
      add(g, "value '" + v->name() + "': its producer was removed");
    }
  }

  /// Checks node `n`'s input `i`; true when it is a live, visible, defined value whose slot
  /// `check_value` should find in its use list.
  bool check_input(const graph& g, node* n, std::size_t i, const std::unordered_set<const node*>& done) {
    value* in = n->inputs()[i];
    if (!in) return false;
    const auto where = [&] { return "node " + n->describe() + ": input '" + in->name() + "'"; };
    if (in->is_dead()) {
      add(g, where() + " was removed");
      return false;
    }
    if (!is_visible_from(g, in)) {
      add(g, where() + " belongs to a graph that does not enclose this node");
      return false;
    }
    if (in->origin() == value_origin::undefined) {
      add(g, where() + " is not defined");
      return false;
    }
    if (in->origin() != value_origin::node_output) return true;
    if (in->owner() == &g) {
      if (!done.count(in->producer())) add(g, where() + " is used before its producer runs (not in topological order)");
      return true;
    }
    // An outer value: its producer must come before the node that holds this subgraph.
    const graph& outer = *in->owner();
    const auto& position = positions_in(outer);
    const auto holder = position.find(enclosing(outer, n));
    const auto producer = position.find(in->producer());
    if (holder != position.end() && (producer == position.end() || holder->second < producer->second)) {
      add(g, where() + " refers to an outer value produced after the subgraph's node");
    }
    return true;
  }

  const std::unordered_map<const node*, std::size_t>& positions_in(const graph& g) {
    auto [it, inserted] = positions.try_emplace(&g);
    if (inserted) {
      for (node* m : g.nodes()) it->second.emplace(m, it->second.size());
    }
    return it->second;
  }

  /// The error path: find the node whose slot the use list misses, to name it. Scans the
  /// value's graph, so only the first few such problems get a node name.
  void report_missing_use(const graph& g, const value* v) {
    const std::string fallback = "value '" + v->name() + "': its use list misses a node that reads it";
    if (problems.size() >= 8) return add(g, fallback);
    const std::unordered_set<use, use_hash> listed(v->uses().begin(), v->uses().end());
    const node* missed = first_unlisted_reader(*v->owner(), v, listed);
    if (!missed) return add(g, fallback);
    add(*missed->owner(), "node " + missed->describe() + ": input '" + v->name() + "': the value's use list misses this node");
  }

  static const node* first_unlisted_reader(const graph& g, const value* v, const std::unordered_set<use, use_hash>& listed) {
    for (node* n : g.nodes()) {
      for (std::size_t i = 0; i < n->inputs().size(); ++i) {
        if (n->inputs()[i] == v && !listed.count(use{n, i})) return n;
      }
      for (graph* sub : n->subgraphs()) {
        if (const node* found = first_unlisted_reader(*sub, v, listed)) return found;
      }
    }
    return nullptr;
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
