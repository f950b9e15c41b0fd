#pragma once
/// A graph: values and nodes in topological order, with a mutation API that keeps use lists
/// consistent.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/name_allocator.hpp"
#include "inferopt/ir/node.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir {

/// Iterates the live nodes of a graph in order, skipping erased ones.
class node_range {
 public:
  class iterator {
   public:
    using value_type = node*;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const std::unique_ptr<node>* at, const std::unique_ptr<node>* end) : at_(at), end_(end) { skip(); }
    node* operator*() const noexcept { return at_->get(); }
    iterator& operator++() noexcept { ++at_; skip(); return *this; }
    iterator operator++(int) noexcept { iterator old = *this; ++*this; return old; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

   private:
    void skip() noexcept;
    const std::unique_ptr<node>* at_ = nullptr;
    const std::unique_ptr<node>* end_ = nullptr;
  };
  node_range(const std::unique_ptr<node>* b, const std::unique_ptr<node>* e) : begin_(b), end_(e) {}
  [[nodiscard]] iterator begin() const noexcept { return {begin_, end_}; }
  [[nodiscard]] iterator end() const noexcept { return {end_, end_}; }

 private:
  const std::unique_ptr<node>* begin_;
  const std::unique_ptr<node>* end_;
};

/// What a new node looks like; inputs may be null for omitted optional inputs.
struct node_spec {
  std::string op_type;
  std::vector<value*> inputs;
  /// Output names; an empty name makes a fresh unique one, derived from the node name.
  std::vector<std::string> outputs;
  std::vector<attribute> attributes;
  /// The node's name, or a fresh variant of it (`name_1`, ...) when another node of the graph
  /// has it already: a graph never gains a second node of one name. Empty stays empty.
  std::string name;
  std::string domain;
};

/// A graph owns its nodes, values and nested subgraphs. Handles (`node*`, `value*`) never
/// own anything and stay valid until `compact()` runs after they were erased.
///
/// Invariants kept by every mutation: each value is defined once; `value::uses()` lists
/// exactly the (node, input slot) pairs that read it, including nodes of nested subgraphs;
/// erased nodes hold no uses. Topological order is the caller's duty when inserting;
/// `sort_topologically()` restores it.
class graph {
 public:
  graph() = default;
  explicit graph(std::string name) : name_(std::move(name)) {}
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph();

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // ---- queries -------------------------------------------------------------------------
  [[nodiscard]] node_range nodes() const noexcept;
  /// A snapshot of the live nodes, safe to hold while inserting.
  [[nodiscard]] std::vector<node*> node_list() const;
  [[nodiscard]] std::size_t node_count() const noexcept { return live_nodes_; }
  /// Nodes of this graph and of every nested subgraph.
  [[nodiscard]] std::size_t node_count_recursive() const;
  [[nodiscard]] std::span<value* const> inputs() const noexcept { return inputs_; }
  [[nodiscard]] std::span<value* const> outputs() const noexcept { return outputs_; }
  /// Initializers in file order (including those that are also graph inputs).
  [[nodiscard]] std::vector<value*> initializers() const;
  /// Every live value of this graph.
  [[nodiscard]] std::vector<value*> values() const;
  /// The value with this name in this graph, or null (enclosing scopes are not searched).
  [[nodiscard]] value* find_value(std::string_view name) const;
  /// The value with this name here or in an enclosing graph, or null.
  [[nodiscard]] value* resolve(std::string_view name) const;
  [[nodiscard]] graph* parent() const noexcept { return parent_; }
  [[nodiscard]] node* parent_node() const noexcept { return parent_node_; }
  /// Whether a graph nested in this one, at any depth, defines a value named `name`.
  [[nodiscard]] bool defined_in_subgraphs(std::string_view name) const { return names_.is_defined_below(name); }
  /// The names of this graph, and fresh value and node names for it.
  [[nodiscard]] name_allocator& names() noexcept { return names_; }
  [[nodiscard]] const name_allocator& names() const noexcept { return names_; }
  /// A value name no value of this graph, its ancestors or its subgraphs uses yet; short for
  /// `names().value_name(base)`.
  [[nodiscard]] std::string unique_name(std::string_view base) { return names_.value_name(base); }

  // ---- building --------------------------------------------------------------------------
  value* add_input(std::string name, std::optional<value_type> type);
  /// Adds a constant; `t.name` is replaced by `name`.
  value* add_initializer(std::string name, tensor t);
  /// Turns an existing graph input into one with a default value (IR < 4 style).
  void set_initializer(value* v, tensor t);
  void remove_initializer(value* v);
  void add_output(value* v);
  void set_output(std::size_t index, value* v);
  void remove_output(std::size_t index);
  /// Appends a node at the end, or before `position` when given.
  node* add_node(node_spec spec, node* position = nullptr);

  // ---- mutation --------------------------------------------------------------------------
  void set_input(node* n, std::size_t index, value* v);
  void add_node_input(node* n, value* v);
  /// Gives `n` a new output value in slot `index` (named `name`, or a fresh name when empty);
  /// slots between its last output and `index` stay omitted. The slot must be free.
  value* add_node_output(node* n, std::size_t index, std::string name = {});
  /// Drops the node's trailing omitted inputs, which ONNX reads the same as absent ones.
  void trim_omitted_inputs(node* n);
  /// Points every use of `from` (and every graph output naming it) at `to`.
  void replace_all_uses(value* from, value* to);
  /// Like `replace_all_uses`, but graph outputs keep naming `from`; returns uses moved.
  std::size_t replace_uses_except_outputs(value* from, value* to);
  /// Removes a node. Refused (`errc::invalid_argument`) while an output is still used or is a
  /// graph output: erasing must never leave a dangling use.
  void erase(node* n);
  /// Removes an unused, non-output value that no node produces (an unused initializer).
  void erase_value(value* v);
  /// Drops the value from `GraphProto.value_info` and forgets its type.
  void clear_value_info(value* v);
  /// Renames a value (its uses follow, being handles).
  void rename(value* v, std::string new_name);
  /// Moves `n` right before `position`.
  void move_before(node* n, node* position);
  /// Stable topological sort (Kahn, keeping the current order among ready nodes).
  /// Throws `errc::invalid_model` naming a node on a cycle.
  void sort_topologically();
  /// Frees erased nodes and values; handles to them become invalid.
  void compact();

  /// A deep copy with the same names; tensors share their data with this graph.
  [[nodiscard]] std::unique_ptr<graph> clone() const;

 private:
  friend struct graph_access;
  friend class node;

  value* new_value(std::string name, value_origin origin);
  /// add_node without making the node name unique: the loader keeps the file's names.
  node* insert_node(node_spec spec, node* position);
  /// Makes `sub` a subgraph of this graph, held by `holder`.
  void adopt(graph& sub, node* holder);
  void add_use(value* v, node* user, std::size_t index);
  void remove_use(value* v, node* user, std::size_t index);
  void detach_uses(node* n);
  void clone_into(graph& dst) const;

  std::string name_;
  std::vector<std::unique_ptr<node>> nodes_;  // topological order; may hold erased nodes
  std::vector<std::unique_ptr<value>> values_;
  std::unordered_map<std::string, value*> by_name_;  // live values only
  std::vector<value*> inputs_;
  std::vector<value*> outputs_;
  std::vector<value*> initializer_order_;
  std::vector<value*> value_info_order_;
  graph* parent_ = nullptr;
  node* parent_node_ = nullptr;
  std::size_t live_nodes_ = 0;
  std::size_t next_serial_ = 0;
  name_allocator names_;  // every live value name and node name of this graph
  std::string residual_;  // serialized GraphProto: doc_string, sparse_initializer, annotations
};

}  // namespace inferopt::ir
