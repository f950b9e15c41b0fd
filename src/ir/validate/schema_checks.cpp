// Nodes against ONNX's operator schemas: counts, attributes and type constraints.
//
// The definitions come from a table generated from the onnx and onnxruntime packages
// (generated_schemas.inc). The checks are those of ONNX's OpSchema::Verify (counts, attribute
// names, types, values and presence) plus what onnxruntime refuses beyond it (an empty
// required input) and type constraints, with messages that name the node.

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "checks.hpp"
#include "generated_schemas.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir::validation {
namespace {

[[noreturn]] void refuse_unknown_op(const node& n, std::int64_t opset) {
  const std::string domain = n.is_onnx_domain() ? "ai.onnx" : n.domain();
  refuse(n, domain + " opset " + std::to_string(opset) + " has no operator '" + n.op_type() + "'");
}

/// The definition that describes `n` at `opset` (the model's import of the node's domain),
/// for ai.onnx and onnxruntime's domains; null for other domains (model-local functions,
/// inferopt's own, ai.onnx.ml), which have no schema here. An op the opset does not define
/// is refused.
const op_definition* find_definition(const node& n, std::int64_t opset) {
  if (opset <= 0) return nullptr;
  const std::string_view domain = n.is_onnx_domain() ? std::string_view() : std::string_view(n.domain());
  if (!has_generated_domain(domain)) return nullptr;
  const op_definition* d = find_generated_definition(domain, n.op_type(), opset);
  if (!d) refuse_unknown_op(n, opset);
  return d;
}

/// ONNX's name of the kind (FLOAT, INTS, ...), as protobuf's enum descriptor spells it.
std::string kind_name(attribute_kind k) {
  const std::string& name = onnx::AttributeProto::AttributeType_Name(static_cast<onnx::AttributeProto::AttributeType>(k));
  return name.empty() ? "unknown" : name;
}

/// The value count of one side (inputs or outputs) within what the formals allow.
void check_count(const node& n, std::size_t count, int least, int most, const char* side) {
  if (count >= static_cast<std::size_t>(least) && count <= static_cast<std::size_t>(most)) return;
  const std::string range = most == std::numeric_limits<int>::max()
                                ? "[min=" + std::to_string(least) + ", no max]"
                                : "[min=" + std::to_string(least) + ", max=" + std::to_string(most) + "]";
  refuse(n, "has " + std::string(side) + " size " + std::to_string(count) + " not in range " + range);
}

/// An empty name stands for an omitted value. ONNX's `Verify` allows it for any formal that
/// is not single; onnxruntime also refuses an omitted variadic input, so inputs must be
/// optional to be omitted.
void check_present(const node& n, std::span<value* const> values, const std::vector<formal_parameter>& formals,
                   const char* side, bool only_optional_omitted) {
  for (std::size_t i = 0; i < values.size() && !formals.empty(); ++i) {
    if (values[i]) continue;
    const formal_parameter& formal = formals[std::min(i, formals.size() - 1)];
    const bool allowed = only_optional_omitted ? formal.option == arity::optional : formal.option != arity::single;
    if (!allowed) refuse(n, std::string(side) + " " + std::to_string(i) + " (" + formal.name + ") is required but empty");
  }
}

bool is_list(attribute_kind k) {
  return k == attribute_kind::floats || k == attribute_kind::ints || k == attribute_kind::strings ||
         k == attribute_kind::tensors || k == attribute_kind::graphs;
}

std::size_t list_size(const attribute& a) {
  return a.floats.size() + a.ints.size() + a.strings.size() + a.tensors.size() + a.graphs.size();
}

/// Attribute names the op knows, each once, of its type, lists not empty, the required ones
/// present. Names starting with two underscores are implementation details ONNX skips.
void check_attributes(const node& n, const op_definition& d) {
  std::set<std::string_view> seen;
  for (const attribute& a : n.attributes()) {
    if (!seen.insert(a.name).second) refuse(n, "attribute '" + a.name + "' appears more than once");
    const auto it = d.attributes.find(a.name);
    if (it == d.attributes.end()) {
      if (a.name.starts_with("__")) continue;
      refuse(n, "Unrecognized attribute: " + a.name + " for operator " + n.op_type());
    }
    const attribute_kind expected = it->second.kind;
    if (a.kind != expected) {
      refuse(n, "attribute '" + a.name + "' is " + kind_name(a.kind) + ", but " + n.op_type() + " takes " + kind_name(expected));
    }
    if (is_list(expected) && list_size(a) == 0) refuse(n, "attribute '" + a.name + "' is an empty list");
  }
  for (const auto& [name, definition] : d.attributes) {
    if (definition.required && !seen.contains(name)) refuse(n, "required attribute '" + name + "' is missing");
  }
}

/// Binds type variables to the element types the node's values have, formal by formal.
class type_binder {
 public:
  type_binder(const node& n, const op_definition& d) : n_(n), d_(d) {}

  void check(std::span<value* const> values, const std::vector<formal_parameter>& formals, const char* role) {
    for (std::size_t i = 0; i < values.size() && !formals.empty(); ++i) {
      const bool past_end = i >= formals.size();
      const formal_parameter& formal = formals[past_end ? formals.size() - 1 : i];
      if (past_end && formal.option != arity::variadic) return;  // the count check refused it
      if (values[i]) check_value(*values[i], formal, role);
    }
  }

 private:
  void check_value(const value& v, const formal_parameter& formal, const char* role) {
    // An initializer is a tensor of its own element type, declared or not.
    if (!v.type() && !v.is_initializer()) return;
    const auto constraint = d_.type_constraints.find(formal.type_variable);
    if (constraint == d_.type_constraints.end()) return;
    const allowed_types& allowed = constraint->second;
    const std::string subject = std::string(role) + " '" + v.name() + "'";
    if (!v.is_initializer() && !v.type()->is_tensor) {
      if (!allowed.takes_non_tensors) refuse(n_, subject + " is not a tensor, but " + formal.name + " of " + n_.op_type() + " must be one");
      return;
    }
    const data_type t = v.is_initializer() ? v.initializer()->dtype : v.type()->elem_type;
    if (t == data_type::undefined || allowed.takes_non_tensors) return;
    if (!allowed.allows(t)) {
      refuse(n_, subject + " is " + std::string(to_string(t)) + ", a type " + n_.op_type() + " does not take for " +
                     formal.name);
    }
    const bool homogeneous = formal.option != arity::variadic || formal.homogeneous;
    if (!homogeneous) return;
    auto [bound, inserted] = bound_.try_emplace(formal.type_variable, t, v.name());
    if (!inserted && bound->second.first != t) {
      refuse(n_, subject + " is " + std::string(to_string(t)) + " but '" + bound->second.second + "' is " +
                     std::string(to_string(bound->second.first)) + ", and " + n_.op_type() + " needs one type for both");
    }
  }

  const node& n_;
  const op_definition& d_;
  std::map<std::string, std::pair<data_type, std::string>> bound_;  // type variable -> type, whose
};

/// Every attribute states its type (ONNX requires it since IR version 2; onnxruntime refuses
/// a node without it). The loader keeps a missing type as UNDEFINED in the residual.
void check_attribute_types_present(const node& n) {
  for (const attribute& a : n.attributes()) {
    onnx::AttributeProto stored;
    const bool parsed = a.residual.empty() || stored.ParseFromString(a.residual);
    const bool typed = a.residual.empty() ? a.kind != attribute_kind::undefined : stored.has_type() && stored.type() != 0;
    if (!parsed || !typed) refuse(n, "attribute '" + a.name + "' has no type");
    if (static_cast<int>(a.kind) < 1 || static_cast<int>(a.kind) > static_cast<int>(attribute_kind::type_protos)) {
      refuse(n, "attribute '" + a.name + "' has an unknown type " + std::to_string(static_cast<int>(a.kind)));
    }
  }
}

}  // namespace

void check_schema(const node& n, std::int64_t opset) {
  check_attribute_types_present(n);
  const op_definition* d = find_definition(n, opset);
  if (!d) return;
  if (d->deprecated) refuse(n, n.op_type() + " is deprecated since opset " + std::to_string(d->since));
  check_count(n, n.inputs().size(), d->min_inputs, d->max_inputs, "input");
  check_count(n, n.outputs().size(), d->min_outputs, d->max_outputs, "output");
  check_present(n, n.inputs(), d->inputs, "input", true);
  check_present(n, n.outputs(), d->outputs, "output", false);
  check_attributes(n, *d);
}

void check_type_constraints(const node& n, std::int64_t opset) {
  const op_definition* d = find_definition(n, opset);
  if (!d) return;
  type_binder binder(n, *d);
  binder.check(n.inputs(), d->inputs, "input");
  binder.check(n.outputs(), d->outputs, "output");
}

}  // namespace inferopt::ir::validation
