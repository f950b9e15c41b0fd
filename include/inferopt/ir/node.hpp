#pragma once
/// A node: one operator application.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/attribute.hpp"
#include "inferopt/ir/fwd.hpp"

namespace inferopt::ir {

/// A node is owned by its graph. Inputs and outputs are value handles; a null handle is an
/// omitted optional input or output (an empty name in the file). Change inputs and outputs
/// through the graph so that use lists stay consistent; attributes may be edited directly.
class node {
 public:
  [[nodiscard]] const std::string& op_type() const noexcept { return op_type_; }
  [[nodiscard]] const std::string& domain() const noexcept { return domain_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Renames the node as given (duplicates are allowed, as in a loaded file; add_node is what
  /// keeps new nodes unique).
  void set_name(std::string n);
  void set_op_type(std::string op) { op_type_ = std::move(op); }
  void set_domain(std::string d) { domain_ = std::move(d); }
  /// True for the default ONNX operator set (`""` or `ai.onnx`).
  [[nodiscard]] bool is_onnx_domain() const noexcept { return domain_.empty() || domain_ == "ai.onnx"; }
  /// `op_type` in the default domain?
  [[nodiscard]] bool is(std::string_view op) const noexcept { return is_onnx_domain() && op_type_ == op; }

  [[nodiscard]] std::span<value* const> inputs() const noexcept { return inputs_; }
  [[nodiscard]] std::span<value* const> outputs() const noexcept { return outputs_; }
  /// The i-th input, or null when it is omitted or past the end.
  [[nodiscard]] value* input(std::size_t i) const noexcept { return i < inputs_.size() ? inputs_[i] : nullptr; }
  [[nodiscard]] value* output(std::size_t i) const noexcept { return i < outputs_.size() ? outputs_[i] : nullptr; }

  [[nodiscard]] const std::vector<attribute>& attributes() const noexcept { return attributes_; }
  [[nodiscard]] std::vector<attribute>& attributes() noexcept { return attributes_; }
  [[nodiscard]] const attribute* find_attribute(std::string_view name) const noexcept;
  [[nodiscard]] attribute* find_attribute(std::string_view name) noexcept;
  /// Adds or replaces the attribute with the same name.
  void set_attribute(attribute a);
  bool remove_attribute(std::string_view name);
  [[nodiscard]] std::int64_t attr_int(std::string_view name, std::int64_t fallback) const;
  [[nodiscard]] float attr_float(std::string_view name, float fallback) const;
  [[nodiscard]] std::string attr_string(std::string_view name, std::string fallback) const;
  [[nodiscard]] std::vector<std::int64_t> attr_ints(std::string_view name, std::vector<std::int64_t> fallback) const;

  /// The nested graphs of If, Loop, Scan and any graph-valued attribute.
  [[nodiscard]] std::vector<graph*> subgraphs() const;
  /// The graph of the graph-valued attribute `name` (If's `then_branch`, Loop's `body`), or
  /// null when the node has none.
  [[nodiscard]] graph* subgraph(std::string_view name) const;

  [[nodiscard]] graph* owner() const noexcept { return owner_; }
  [[nodiscard]] bool is_dead() const noexcept { return dead_; }
  /// `'name' (Op)`, or `#index (Op)` for unnamed nodes; for messages.
  [[nodiscard]] std::string describe() const;
  /// The name, or `describe()` for unnamed nodes: a key that reads well in reports.
  [[nodiscard]] std::string label() const { return name_.empty() ? describe() : name_; }

 private:
  friend class graph;
  friend struct graph_access;

  std::string op_type_;
  std::string domain_;
  std::string name_;
  std::vector<value*> inputs_;
  std::vector<value*> outputs_;
  std::vector<attribute> attributes_;
  graph* owner_ = nullptr;
  std::size_t serial_ = 0;  // creation order inside the graph, for messages of unnamed nodes
  bool dead_ = false;
  std::string residual_;  // serialized NodeProto: doc_string, overload, unknown fields
};

}  // namespace inferopt::ir
