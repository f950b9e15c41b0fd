#pragma once
/// A value: one named edge of the graph, with its producer and its uses.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/fwd.hpp"
#include "inferopt/ir/tensor.hpp"
#include "inferopt/ir/value_type.hpp"

namespace inferopt::ir {

/// One consumer of a value: `user->inputs()[input_index]` is the value.
struct use {
  node* user = nullptr;
  std::size_t input_index = 0;
  friend bool operator==(const use&, const use&) = default;
};

/// Where a value comes from.
enum class value_origin {
  node_output,        ///< produced by a node of its graph
  graph_input,        ///< fed by the caller (possibly with an initializer as default)
  initializer,        ///< a constant of the graph, not listed as an input
  declared_elsewhere, ///< defined by a part we keep opaque (sparse_initializer)
  undefined,          ///< referenced but defined nowhere: `verify` reports it
};

/// A value is owned by its graph; `value*` handles stay valid until the graph compacts
/// after the value was removed. Use lists are kept consistent by the graph's mutation API;
/// uses from nodes of nested subgraphs are listed too.
class value {
 public:
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] value_origin origin() const noexcept { return origin_; }
  [[nodiscard]] node* producer() const noexcept { return producer_; }
  [[nodiscard]] std::size_t producer_output() const noexcept { return producer_output_; }
  [[nodiscard]] const std::vector<use>& uses() const noexcept { return uses_; }
  [[nodiscard]] bool has_uses() const noexcept { return !uses_.empty(); }
  [[nodiscard]] graph* owner() const noexcept { return owner_; }

  [[nodiscard]] const std::optional<value_type>& type() const noexcept { return type_; }
  void set_type(std::optional<value_type> t) { type_ = std::move(t); }
  /// The element type, or `undefined` when the type is not known.
  [[nodiscard]] data_type elem_type() const noexcept {
    return type_ && type_->is_tensor ? type_->elem_type : data_type::undefined;
  }

  [[nodiscard]] bool is_graph_input() const noexcept { return origin_ == value_origin::graph_input; }
  [[nodiscard]] bool is_initializer() const noexcept { return initializer_.has_value(); }
  /// A constant: an initializer that the caller cannot override through a graph input.
  [[nodiscard]] bool is_constant() const noexcept { return is_initializer() && !is_graph_input(); }
  [[nodiscard]] const tensor* initializer() const noexcept { return initializer_ ? &*initializer_ : nullptr; }
  [[nodiscard]] bool is_graph_output() const noexcept { return output_refs_ > 0; }
  /// True once the graph removed this value; it disappears at the next compaction.
  [[nodiscard]] bool is_dead() const noexcept { return dead_; }

 private:
  friend class graph;
  friend struct graph_access;

  std::string name_;
  value_origin origin_ = value_origin::undefined;
  node* producer_ = nullptr;  // set iff origin_ == node_output
  std::size_t producer_output_ = 0;
  std::vector<use> uses_;
  std::optional<value_type> type_;
  std::optional<tensor> initializer_;
  graph* owner_ = nullptr;
  int output_refs_ = 0;  // how many entries of the owner's output list name this value
  bool dead_ = false;
  bool in_value_info_ = false;  // listed in GraphProto.value_info
  bool declared_in_file_ = false;  // listed in the value_info of the file it was loaded from
  std::string info_residual_;   // serialized ValueInfoProto (doc_string, unknown type kinds, ...)
};

}  // namespace inferopt::ir
