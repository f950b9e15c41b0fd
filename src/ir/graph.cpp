#include "inferopt/ir/graph.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace inferopt::ir {

void node_range::iterator::skip() noexcept {
  while (at_ != end_ && (*at_)->is_dead()) ++at_;
}

graph::~graph() {
  // A subgraph destroyed while its holder lives takes its names out of the enclosing graphs;
  // our own subgraphs go with us and need not take theirs out of ours.
  names_.detach();
  for (auto& n : nodes_) {
    for (graph* sub : n->subgraphs()) sub->names_.drop_enclosing();
  }
  // Nodes go first, while every value they read (ours and our ancestors') is still alive;
  // nodes of a subgraph drop their uses of outer values as they go.
  for (auto& n : nodes_) {
    if (!n->dead_) detach_uses(n.get());
  }
  nodes_.clear();
}

node_range graph::nodes() const noexcept { return {nodes_.data(), nodes_.data() + nodes_.size()}; }

std::vector<node*> graph::node_list() const {
  std::vector<node*> out;
  out.reserve(live_nodes_);
  for (node* n : nodes()) out.push_back(n);
  return out;
}

std::size_t graph::node_count_recursive() const {
  std::size_t count = live_nodes_;
  for (node* n : nodes()) {
    for (graph* g : n->subgraphs()) count += g->node_count_recursive();
  }
  return count;
}

std::vector<value*> graph::initializers() const {
  std::vector<value*> out;
  for (value* v : initializer_order_) {
    if (!v->dead_ && v->is_initializer()) out.push_back(v);
  }
  return out;
}

std::vector<value*> graph::values() const {
  std::vector<value*> out;
  for (const auto& v : values_) {
    if (!v->dead_) out.push_back(v.get());
  }
  return out;
}

value* graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

value* graph::resolve(std::string_view name) const {
  for (const graph* g = this; g; g = g->parent_) {
    if (value* v = g->find_value(name)) return v;
  }
  return nullptr;
}

value* graph::new_value(std::string name, value_origin origin) {
  if (!name.empty() && by_name_.count(name)) {
    throw error(errc::invalid_model, "value '" + name + "' is defined twice");
  }
  auto v = std::make_unique<value>();
  v->name_ = std::move(name);
  v->origin_ = origin;
  v->owner_ = this;
  value* raw = v.get();
  values_.push_back(std::move(v));
  by_name_.emplace(raw->name_, raw);
  names_.add_value(raw->name_);
  return raw;
}

void graph::adopt(graph& sub, node* holder) {
  sub.parent_ = this;
  sub.parent_node_ = holder;
  sub.names_.attach(names_);
}

value* graph::add_input(std::string name, std::optional<value_type> type) {
  value* v = new_value(std::move(name), value_origin::graph_input);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

value* graph::add_initializer(std::string name, tensor t) {
  value* v = new_value(std::move(name), value_origin::initializer);
  t.name = v->name_;
  v->type_ = value_type{true, t.dtype, shape(t.dims.begin(), t.dims.end())};
  v->initializer_ = std::move(t);
  initializer_order_.push_back(v);
  return v;
}

void graph::set_initializer(value* v, tensor t) {
  expects(v && v->owner_ == this, "value does not belong to this graph");
  expects(v->origin_ == value_origin::graph_input || v->origin_ == value_origin::initializer,
          "only graph inputs and initializers hold constant data");
  t.name = v->name_;
  if (!v->initializer_) initializer_order_.push_back(v);
  v->initializer_ = std::move(t);
}

void graph::remove_initializer(value* v) {
  expects(v && v->owner_ == this && v->is_initializer(), "value is not an initializer of this graph");
  expects(v->origin_ == value_origin::graph_input, "a constant with no graph input must be erased, not emptied");
  v->initializer_.reset();
  std::erase(initializer_order_, v);
}

void graph::add_output(value* v) {
  expects(v != nullptr, "output value is null");
  outputs_.push_back(v);
  ++v->output_refs_;
}

void graph::set_output(std::size_t index, value* v) {
  expects(index < outputs_.size() && v != nullptr, "output index out of range");
  --outputs_[index]->output_refs_;
  outputs_[index] = v;
  ++v->output_refs_;
}

void graph::remove_output(std::size_t index) {
  expects(index < outputs_.size(), "output index out of range");
  --outputs_[index]->output_refs_;
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(index));
}

node* graph::add_node(node_spec spec, node* position) {
  if (!spec.name.empty() && names_.is_node_name_taken(spec.name)) spec.name = names_.node_name(spec.name);
  return insert_node(std::move(spec), position);
}

node* graph::insert_node(node_spec spec, node* position) {
  auto n = std::make_unique<node>();
  n->op_type_ = std::move(spec.op_type);
  n->domain_ = std::move(spec.domain);
  n->name_ = std::move(spec.name);
  n->owner_ = this;
  n->serial_ = next_serial_++;
  n->attributes_ = std::move(spec.attributes);
  node* raw = n.get();
  names_.add_node(raw->name_);
  for (attribute& a : raw->attributes_) {
    for (auto& g : a.graphs) adopt(*g, raw);
  }
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    std::string out_name = spec.outputs[i];
    if (out_name.empty()) out_name = unique_name((raw->name_.empty() ? raw->op_type_ : raw->name_) + "_out" + std::to_string(i));
    value* v = new_value(std::move(out_name), value_origin::node_output);
    v->producer_ = raw;
    v->producer_output_ = i;
    raw->outputs_.push_back(v);
  }
  raw->inputs_.resize(spec.inputs.size(), nullptr);
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.inputs[i]) {
      raw->inputs_[i] = spec.inputs[i];
      add_use(spec.inputs[i], raw, i);
    }
  }
  if (position) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == position; });
    expects(it != nodes_.end(), "insert position is not a node of this graph");
    nodes_.insert(it, std::move(n));
  } else {
    nodes_.push_back(std::move(n));
  }
  ++live_nodes_;
  return raw;
}

void graph::add_use(value* v, node* user, std::size_t index) { v->uses_.push_back(use{user, index}); }

void graph::remove_use(value* v, node* user, std::size_t index) {
  auto it = std::find(v->uses_.begin(), v->uses_.end(), use{user, index});
  if (it != v->uses_.end()) v->uses_.erase(it);
}

void graph::detach_uses(node* n) {
  // One sweep per distinct input value: a node reading one value 30,000 times must not
  // erase from that value's use list 30,000 times.
  std::vector<value*> distinct;
  for (value* v : n->inputs_) {
    if (v) distinct.push_back(v);
  }
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (value* v : distinct) std::erase_if(v->uses_, [n](const use& u) { return u.user == n; });
  std::fill(n->inputs_.begin(), n->inputs_.end(), nullptr);
  for (graph* sub : n->subgraphs()) {
    for (node* inner : sub->nodes()) sub->detach_uses(inner);
  }
}

void graph::set_input(node* n, std::size_t index, value* v) {
  expects(n && n->owner_ == this && !n->dead_, "node does not belong to this graph");
  if (index >= n->inputs_.size()) n->inputs_.resize(index + 1, nullptr);
  if (value* old = n->inputs_[index]) remove_use(old, n, index);
  n->inputs_[index] = v;
  if (v) add_use(v, n, index);
}

void graph::add_node_input(node* n, value* v) { set_input(n, n->inputs_.size(), v); }

void graph::trim_omitted_inputs(node* n) {
  expects(n && n->owner_ == this && !n->dead_, "node does not belong to this graph");
  while (!n->inputs_.empty() && !n->inputs_.back()) n->inputs_.pop_back();  // null: no use to drop
}

std::size_t graph::replace_uses_except_outputs(value* from, value* to) {
  expects(from && to, "null value");
  if (from == to) return 0;
  std::vector<use> moved = from->uses_;
  for (const use& u : moved) {
    u.user->inputs_[u.input_index] = to;
    add_use(to, u.user, u.input_index);
  }
  from->uses_.clear();
  return moved.size();
}

value* graph::add_node_output(node* n, std::size_t index, std::string name) {
  expects(n && n->owner_ == this && !n->dead_, "node does not belong to this graph");
  if (n->outputs_.size() <= index) n->outputs_.resize(index + 1, nullptr);
  expects(n->outputs_[index] == nullptr, "the output slot is taken");
  if (name.empty()) name = unique_name((n->name_.empty() ? n->op_type_ : n->name_) + "_out" + std::to_string(index));
  value* v = new_value(std::move(name), value_origin::node_output);
  v->producer_ = n;
  v->producer_output_ = index;
  n->outputs_[index] = v;
  return v;
}

void graph::replace_all_uses(value* from, value* to) {
  replace_uses_except_outputs(from, to);
  if (from == to) return;
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i] == from) set_output(i, to);
  }
}

void graph::erase(node* n) {
  expects(n && n->owner_ == this && !n->dead_, "node does not belong to this graph");
  for (value* out : n->outputs_) {
    if (!out) continue;
    if (out->has_uses() || out->is_graph_output()) {
      throw error(errc::invalid_argument,
                  "cannot erase node " + n->describe() + ": its output '" + out->name_ + "' is still used");
    }
  }
  detach_uses(n);
  for (value* out : n->outputs_) {
    if (!out) continue;
    out->dead_ = true;
    by_name_.erase(out->name_);
    names_.remove_value(out->name_);
  }
  for (graph* sub : n->subgraphs()) sub->names_.detach();
  names_.remove_node(n->name_);
  n->dead_ = true;
  --live_nodes_;
}

void graph::erase_value(value* v) {
  expects(v && v->owner_ == this && !v->dead_, "value does not belong to this graph");
  expects(!v->has_uses() && !v->is_graph_output(), "value is still used");
  expects(v->origin_ != value_origin::node_output, "a node output goes away with its node");
  if (v->origin_ == value_origin::graph_input) std::erase(inputs_, v);
  v->dead_ = true;
  by_name_.erase(v->name_);
  names_.remove_value(v->name_);
}

void graph::clear_value_info(value* v) {
  expects(v && v->owner_ == this, "value does not belong to this graph");
  v->in_value_info_ = false;
  if (v->origin_ == value_origin::node_output && !v->is_graph_output()) v->type_.reset();
}

void graph::rename(value* v, std::string new_name) {
  expects(v && v->owner_ == this && !v->dead_, "value does not belong to this graph");
  if (new_name == v->name_) return;
  // A name defined in a subgraph would shadow this value for the subgraph's readers of it.
  if (names_.is_value_name_taken(new_name)) {
    throw error(errc::invalid_argument, "value name '" + new_name + "' is taken");
  }
  by_name_.erase(v->name_);
  names_.remove_value(v->name_);
  v->name_ = std::move(new_name);
  if (v->initializer_) v->initializer_->name = v->name_;
  by_name_.emplace(v->name_, v);
  names_.add_value(v->name_);
}

void graph::move_before(node* n, node* position) {
  auto find = [&](node* x) {
    return std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == x; });
  };
  auto from = find(n);
  expects(from != nodes_.end() && find(position) != nodes_.end(), "node does not belong to this graph");
  if (n == position) return;
  std::unique_ptr<node> held = std::move(*from);
  nodes_.erase(from);
  nodes_.insert(find(position), std::move(held));
}

namespace {
/// The node of `g` that contains `n` (itself, or the If/Loop holding it).
node* ancestor_in(const graph& g, node* n) {
  while (n && n->owner() != &g) {
    graph* owner = n->owner();
    n = owner ? owner->parent_node() : nullptr;
  }
  return n;
}
}  // namespace

void graph::sort_topologically() {
  std::vector<node*> order = node_list();
  std::unordered_map<node*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;

  std::vector<std::vector<std::size_t>> successors(order.size());
  std::vector<std::vector<std::size_t>> predecessors(order.size());
  std::vector<std::size_t> pending(order.size(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (value* out : order[i]->outputs_) {
      if (!out) continue;
      for (const use& u : out->uses_) {
        node* user = ancestor_in(*this, u.user);
        auto it = user ? position.find(user) : position.end();
        if (it == position.end()) continue;
        successors[i].push_back(it->second);
        predecessors[it->second].push_back(i);
        ++pending[it->second];
      }
    }
  }
  // A min-heap on the old position keeps the existing order wherever it is already valid.
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> sorted;
  sorted.reserve(order.size());
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    sorted.push_back(i);
    for (std::size_t s : successors[i]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  if (sorted.size() != order.size()) {
    // A left-over node may only sit downstream of a cycle. Every left-over node waits on a
    // left-over predecessor, so walking back along those must revisit a node: that one is
    // on a cycle.
    std::size_t at = 0;
    while (pending[at] == 0) ++at;
    std::vector<bool> visited(order.size(), false);
    while (!visited[at]) {
      visited[at] = true;
      for (std::size_t p : predecessors[at]) {
        if (pending[p] != 0) {
          at = p;
          break;
        }
      }
    }
    throw error(errc::invalid_model, "graph '" + name_ + "' has a cycle through node " + order[at]->describe());
  }
  std::unordered_map<node*, std::unique_ptr<node>> owned;
  std::vector<std::unique_ptr<node>> dead;
  for (auto& p : nodes_) {
    if (p->dead_) {
      dead.push_back(std::move(p));
    } else {
      owned.emplace(p.get(), std::move(p));
    }
  }
  nodes_.clear();
  for (std::size_t i : sorted) nodes_.push_back(std::move(owned[order[i]]));
  for (auto& p : dead) nodes_.push_back(std::move(p));
}

void graph::compact() {
  std::erase_if(nodes_, [](const std::unique_ptr<node>& n) { return n->dead_; });
  std::erase_if(initializer_order_, [](value* v) { return v->dead_ || !v->initializer_; });
  std::erase_if(value_info_order_, [](value* v) { return v->dead_ || !v->in_value_info_; });
  std::erase_if(values_, [](const std::unique_ptr<value>& v) { return v->dead_; });
  for (node* n : nodes()) {
    for (graph* sub : n->subgraphs()) sub->compact();
  }
}

std::unique_ptr<graph> graph::clone() const {
  auto copy = std::make_unique<graph>();
  clone_into(*copy);
  return copy;
}

void graph::clone_into(graph& dst) const {
  dst.name_ = name_;
  dst.residual_ = residual_;
  dst.names_.copy_stems(names_);
  std::unordered_map<const value*, value*> map;
  for (const auto& v : values_) {
    if (v->dead_) continue;
    value* c = dst.new_value(v->name_, v->origin_);
    c->type_ = v->type_;
    c->initializer_ = v->initializer_;
    c->in_value_info_ = v->in_value_info_;
    c->declared_in_file_ = v->declared_in_file_;
    c->info_residual_ = v->info_residual_;
    map[v.get()] = c;
  }
  auto mapped = [&](value* v) -> value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    return dst.resolve(v->name_);  // a value of an enclosing graph
  };
  for (value* v : inputs_) dst.inputs_.push_back(map.at(v));
  for (value* v : outputs_) dst.add_output(mapped(v));
  for (value* v : initializer_order_) {
    if (!v->dead_ && v->initializer_) dst.initializer_order_.push_back(map.at(v));
  }
  for (value* v : value_info_order_) {
    if (!v->dead_ && v->in_value_info_) dst.value_info_order_.push_back(map.at(v));
  }
  for (node* n : nodes()) {
    auto c = std::make_unique<node>();
    node* raw = c.get();
    c->op_type_ = n->op_type_;
    c->domain_ = n->domain_;
    c->name_ = n->name_;
    c->residual_ = n->residual_;
    c->owner_ = &dst;
    c->serial_ = n->serial_;
    dst.names_.add_node(c->name_);
    dst.nodes_.push_back(std::move(c));
    ++dst.live_nodes_;
    for (std::size_t i = 0; i < n->outputs_.size(); ++i) {
      value* out = mapped(n->outputs_[i]);
      if (out) {
        out->producer_ = raw;
        out->producer_output_ = i;
      }
      raw->outputs_.push_back(out);
    }
    for (std::size_t i = 0; i < n->inputs_.size(); ++i) {
      value* in = mapped(n->inputs_[i]);
      raw->inputs_.push_back(in);
      if (in) dst.add_use(in, raw, i);
    }
    for (const attribute& a : n->attributes_) {
      attribute ca;
      ca.name = a.name;
      ca.kind = a.kind;
      ca.f = a.f;
      ca.i = a.i;
      ca.s = a.s;
      ca.floats = a.floats;
      ca.ints = a.ints;
      ca.strings = a.strings;
      ca.tensors = a.tensors;
      ca.residual = a.residual;
      for (const auto& g : a.graphs) {
        auto sub = std::make_unique<graph>();
        dst.adopt(*sub, raw);
        g->clone_into(*sub);
        ca.graphs.push_back(std::move(sub));
      }
      raw->attributes_.push_back(std::move(ca));
    }
  }
  dst.next_serial_ = next_serial_;
}

}  // namespace inferopt::ir
