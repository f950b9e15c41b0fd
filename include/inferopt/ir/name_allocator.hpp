#pragma once
/// Fresh value and node names. Every graph owns a `name_allocator` that its mutations keep in
/// sync with the names it holds, so a rewrite asks for a name in O(1) amortized instead of
/// searching the model for one.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inferopt::ir {

/// A multiset of names: how many holders each name has. A loaded model may repeat a node name
/// (or sibling subgraphs a value name), and removing one holder must not free the name.
class name_counts {
 public:
  void add(std::string_view name, std::size_t times = 1);
  /// Precondition: `name` was added at least `times` times more than it was removed.
  void remove(std::string_view name, std::size_t times = 1);
  [[nodiscard]] bool contains(std::string_view name) const { return counts_.find(name) != counts_.end(); }
  /// Calls `f(name, count)` for every name held.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [name, count] : counts_) f(std::string_view(name), count);
  }

 private:
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, hash, std::equal_to<>> counts_;  // every count > 0
};

/// Makes names from stems: `stem` when it is free, else `stem_1`, `stem_2`, ... Each stem
/// remembers the next suffix to try, so `n` names from one stem cost O(n) probes in all, plus
/// one per taken name skipped (each is skipped once).
class name_stems {
 public:
  /// The first candidate for `stem` for which `taken(candidate)` is false.
  template <class Taken>
  std::string fresh(std::string_view stem, Taken&& taken) {
    const auto it = next_suffix_.try_emplace(std::string(stem), 0).first;
    std::size_t& k = it->second;  // 0: `stem` itself was never handed out
    if (k == 0) {
      k = 1;
      if (!taken(stem)) return std::string(stem);
    }
    for (;; ++k) {
      std::string candidate = std::string(stem) + "_" + std::to_string(k);
      if (!taken(std::string_view(candidate))) {
        ++k;
        return candidate;
      }
    }
  }

 private:
  std::unordered_map<std::string, std::size_t> next_suffix_;
};

/// The names of one graph and fresh names for it, kept in sync by the graph's mutations
/// (adding, renaming and erasing values and nodes, attaching and erasing subgraphs).
///
/// Value names follow ONNX scoping: a value must differ from every value of the enclosing
/// graphs (it would shadow them) and of the nested graphs, at any depth (they would shadow
/// it); sibling subgraphs may reuse a name. Node names need only differ within one graph,
/// which is what onnxruntime checks ("two nodes with same node name").
///
/// Cost: each query and each fresh name is a hash lookup per enclosing graph (nesting is
/// shallow); each value added or removed updates one count per enclosing graph.
/// Not thread-safe: it changes with its graph.
class name_allocator {
 public:
  name_allocator() = default;
  name_allocator(const name_allocator&) = delete;
  name_allocator& operator=(const name_allocator&) = delete;

  /// A value name no value of this graph, of an enclosing or of a nested graph has:
  /// `stem` ("v" when empty) or `stem_k`.
  [[nodiscard]] std::string value_name(std::string_view stem);
  /// A node name no node of this graph has: `stem` ("node" when empty) or `stem_k`.
  [[nodiscard]] std::string node_name(std::string_view stem);

  /// Whether a value of this graph, of an enclosing or of a nested graph is called `name`.
  [[nodiscard]] bool is_value_name_taken(std::string_view name) const;
  /// Whether a value of a nested graph, at any depth, is called `name`.
  [[nodiscard]] bool is_defined_below(std::string_view name) const { return nested_values_.contains(name); }
  /// Whether a node of this graph is called `name`.
  [[nodiscard]] bool is_node_name_taken(std::string_view name) const { return nodes_.contains(name); }

 private:
  friend class graph;
  friend class node;

  // Called by the graph (and node::set_name); empty names are never recorded.
  void add_value(std::string_view name);
  void remove_value(std::string_view name);
  void add_node(std::string_view name);
  void remove_node(std::string_view name);
  /// Makes this allocator's graph a subgraph of `enclosing`'s: its names, nested ones
  /// included, now count as nested names there and further up.
  void attach(name_allocator& enclosing);
  /// Undoes `attach` (the subgraph's node was erased, or the subgraph is destroyed).
  void detach();
  /// Forgets the enclosing graph without updating it: it is being destroyed.
  void drop_enclosing() noexcept { enclosing_ = nullptr; }
  /// The stem counters of `other`, so a clone hands out the names the original would.
  void copy_stems(const name_allocator& other);

  name_allocator* enclosing_ = nullptr;  // the allocator of the graph this one is nested in
  name_counts values_;                   // this graph's values; each count is 1
  name_counts nested_values_;            // values of nested graphs, at any depth
  name_counts nodes_;                    // this graph's node names
  name_stems value_stems_;
  name_stems node_stems_;
};

}  // namespace inferopt::ir
