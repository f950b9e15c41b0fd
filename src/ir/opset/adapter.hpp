#pragma once
// What every opset adapter shares: the step one node takes across one change of its op's
// definition (step_context: the node, the version crossed, the opset new nodes must suit, the
// known facts about values, and the edits adapters make) and the adapter interface.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "value_facts.hpp"

namespace inferopt::ir::opset {

/// One node crossing the change of its op's definition at `version`: going up, from the form
/// before `version` to the form at it; going down, the reverse.
struct step_context {
  graph& g;
  node* n;  ///< the node; an adapter that replaces it points this at the replacement
  /// The node that followed `n` when the walk began (null: `n` was last): where nodes that
  /// read `n`'s outputs go, so topological order holds without a sort.
  node* next;
  std::int64_t version;  ///< the definition version being crossed
  std::int64_t target;   ///< the opset the model ends at: nodes adapters add use its form
  std::int64_t ir_version;
  const value_facts& facts;

  /// Throws error(errc::unsupported): `node 'x' (Op): why`.
  [[noreturn]] void refuse(const std::string& why) const;

  // ---- what is known ------------------------------------------------------------------
  [[nodiscard]] std::optional<std::size_t> rank(const value* v) const { return facts.rank(v); }
  [[nodiscard]] std::optional<std::vector<std::int64_t>> dims(const value* v) const { return facts.dims(v); }
  [[nodiscard]] data_type elem_type(const value* v) const { return facts.elem_type(v); }
  /// The values of a constant int32/int64 operand (an initializer the caller cannot feed, or
  /// a Constant node's output, as exporters often write axes); nullopt when it is not one.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> constant_ints(const value* v) const;
  /// The values of a constant floating operand, widened to double; nullopt when not one.
  [[nodiscard]] std::optional<std::vector<double>> constant_floats(const value* v) const;
  /// The constant values of input `index`, an operand the older form takes as an attribute;
  /// refuses when the input is not a constant.
  [[nodiscard]] std::vector<std::int64_t> attribute_ints(std::size_t index) const;
  [[nodiscard]] std::vector<double> attribute_floats(std::size_t index) const;
  /// `rank(v)`, or a refusal saying what needed it.
  [[nodiscard]] std::int64_t rank_or_refuse(const value* v, std::string_view what) const;
  /// `elem_type(v)`, or a refusal saying what needed it.
  [[nodiscard]] data_type elem_type_or_refuse(const value* v, std::string_view what) const;

  // ---- edits --------------------------------------------------------------------------
  /// A new initializer holding `t`, named after the node and `suffix`.
  value* add_constant(tensor t, std::string_view suffix);
  /// A new 1-D int64 initializer (a scalar when `scalar`).
  value* add_ints(const std::vector<std::int64_t>& values, std::string_view suffix, bool scalar = false);
  /// Moves the ints attribute `name` to input `index` as a new int64 initializer (how axes,
  /// sizes and pads became inputs); false when the node has no such attribute.
  bool move_ints_to_input(const std::string& name, std::size_t index);
  /// A new scalar of element type `type` (floating or integer) holding `v`.
  value* add_scalar(data_type type, double v, std::string_view suffix);
  /// Adds a node before `n` (its inputs are defined there), named after `n` and `suffix`, with
  /// `outputs` fresh outputs; returns it.
  node* add_before(std::string op, std::vector<value*> inputs, std::vector<attribute> attributes,
                   std::string_view suffix, std::size_t outputs = 1);
  /// Adds a node after `n` (it may read `n`'s outputs).
  node* add_after(std::string op, std::vector<value*> inputs, std::vector<attribute> attributes,
                  std::string_view suffix, std::size_t outputs = 1);
  /// Replaces `n` by a node of `op` with `inputs`, `n`'s attributes and name, and its first
  /// `outputs` outputs (same names and uses); outputs past them must be unread. Points `n` at
  /// the new node. How an adapter drops inputs or outputs the older form does not have.
  void rebuild(std::string op, std::vector<value*> inputs, std::size_t outputs);
  /// Makes every reader of `from` (graph outputs included) read `to`, and gives `to` the name
  /// `from` had and `from` a fresh one: a node inserted after `n` takes over `n`'s output.
  void take_over(value* from, value* to);
};

/// One kind of definition change, applied to one node at a time. Going either way returns
/// whether the node changed (a new attribute that is absent needs no edit), and refuses,
/// through `step_context::refuse`, what the other form cannot express; a refusal may leave
/// the node half edited, as the whole conversion works on a copy that is then dropped. A
/// direction an adapter does not override needs no edit.
class adapter {
 public:
  explicit adapter(std::string name) : name_(std::move(name)) {}
  virtual ~adapter() = default;
  /// Stable kebab-case name, for reports.
  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  virtual bool up(step_context&) const { return false; }
  virtual bool down(step_context&) const { return false; }

 private:
  std::string name_;
};

/// The one instance of an adapter type, which the accessors in adapters.hpp return.
template <class Adapter>
const adapter& instance() {
  static const Adapter a;
  return a;
}

/// A copy of `n`'s inputs (null for omitted ones).
[[nodiscard]] inline std::vector<value*> inputs_of(const node& n) { return {n.inputs().begin(), n.inputs().end()}; }

/// The `ints` of attribute `name`, or nullopt when absent or of another kind.
[[nodiscard]] std::optional<std::vector<std::int64_t>> ints_attribute(const node& n, std::string_view name);

}  // namespace inferopt::ir::opset
