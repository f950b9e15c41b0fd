// Nodes against ONNX's operator schemas: counts, attributes and type constraints.
//
// The definitions come from a table generated from the onnx and onnxruntime packages
// (generated_schemas.inc), built into the linked library's schema type so that its
// `OpSchema::Verify` checks counts and attributes.

#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/value.hpp"
#include "generated_schemas.hpp"

namespace inferopt::ir::validation {
namespace {

/// The schema that describes `n` at `opset` (the model's import of the node's domain): the
/// generated table's newest definition at or before `opset`, for ai.onnx and onnxruntime's
/// domains. An op the opset does not define is refused; other domains (model-local
/// functions, inferopt's own, ai.onnx.ml) have no schema here.
struct schema_in_force {
  const onnx::OpSchema* schema = nullptr;
  /// Per type variable, element types the library cannot name.
  const std::map<std::string, std::vector<data_type>, std::less<>>* newer_types = nullptr;
};

[[noreturn]] void refuse_unknown_op(const node& n, std::int64_t opset) {
  const std::string domain = n.is_onnx_domain() ? "ai.onnx" : n.domain();
  refuse(n, domain + " opset " + std::to_string(opset) + " has no operator '" + n.op_type() + "'");
}

schema_in_force find_schema(const node& n, std::int64_t opset) {
  if (opset <= 0) return {};
  const std::string_view domain = n.is_onnx_domain() ? std::string_view() : std::string_view(n.domain());
  if (!has_generated_domain(domain)) return {};
  const generated_definition* d = find_generated_definition(domain, n.op_type(), opset);
  if (!d) refuse_unknown_op(n, opset);
  return {&d->schema, &d->newer_types};
}

/// One attribute as `OpSchema::Verify` reads it: name, type and values, with empty
/// stand-ins for tensors and graphs (checked elsewhere).
void add_attribute_view(const attribute& a, onnx::AttributeProto& ap) {
  ap.set_name(a.name);
  if (a.kind == attribute_kind::undefined) return;
  ap.set_type(static_cast<onnx::AttributeProto::AttributeType>(a.kind));
  switch (a.kind) {
    case attribute_kind::f: ap.set_f(a.f); break;
    case attribute_kind::i: ap.set_i(a.i); break;
    case attribute_kind::s: ap.set_s(a.s); break;
    case attribute_kind::t: ap.mutable_t(); break;
    case attribute_kind::g: ap.mutable_g(); break;
    case attribute_kind::sparse_tensor: ap.mutable_sparse_tensor(); break;
    case attribute_kind::type_proto: ap.mutable_tp(); break;
    default: break;
  }
  for (float v : a.floats) ap.add_floats(v);
  for (std::int64_t v : a.ints) ap.add_ints(v);
  for (const std::string& v : a.strings) ap.add_strings(v);
  if (a.kind == attribute_kind::tensors) for (std::size_t k = 0; k < a.tensors.size(); ++k) ap.add_tensors();
  if (a.kind == attribute_kind::graphs) for (std::size_t k = 0; k < a.graphs.size(); ++k) ap.add_graphs();
}

/// What `OpSchema::Verify` reads of a node: names, counts and attributes.
onnx::NodeProto schema_view(const node& n) {
  onnx::NodeProto np;
  np.set_name(n.name());
  np.set_op_type(n.op_type());
  for (const value* v : n.inputs()) np.add_input(v ? v->name() : std::string());
  for (const value* v : n.outputs()) np.add_output(v ? v->name() : std::string());
  for (const attribute& a : n.attributes()) add_attribute_view(a, *np.add_attribute());
  return np;
}

std::string one_line(std::string s) {
  for (char& c : s) c = (c == '\n' || c == '\r') ? ' ' : c;
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s;
}

/// The element type each tensor type string of the library stands for.
const std::unordered_map<onnx::DataType, data_type>& tensor_types() {
  static const auto table = [] {
    std::unordered_map<onnx::DataType, data_type> out;
    for (int t = 1; t <= onnx::TensorProto_DataType_BFLOAT16; ++t) {
      onnx::TypeProto tp;
      tp.mutable_tensor_type()->set_elem_type(t);
      out.emplace(onnx::Utils::DataTypeUtils::ToType(tp), static_cast<data_type>(t));
    }
    return out;
  }();
  return table;
}

/// One formal parameter's allowed types, as element types plus whether it takes anything
/// that is not a plain tensor (sequences, optionals, maps).
struct allowed_types {
  std::vector<data_type> elements;
  bool takes_non_tensors = false;

  [[nodiscard]] bool allows(data_type t) const { return std::find(elements.begin(), elements.end(), t) != elements.end(); }
};

allowed_types allowed_by(const onnx::OpSchema::FormalParameter& p, const schema_in_force& s) {
  allowed_types out;
  for (const onnx::DataType& t : p.GetTypes()) {
    auto it = tensor_types().find(t);
    if (it != tensor_types().end()) out.elements.push_back(it->second);
    else out.takes_non_tensors = true;
  }
  if (s.newer_types) {
    if (auto it = s.newer_types->find(p.GetTypeStr()); it != s.newer_types->end()) {
      out.elements.insert(out.elements.end(), it->second.begin(), it->second.end());
    }
  }
  return out;
}

/// Binds type variables to the element types the node's values have, formal by formal.
class type_binder {
 public:
  type_binder(const node& n, const schema_in_force& s) : n_(n), s_(s) {}

  void check(std::span<value* const> values, const std::vector<onnx::OpSchema::FormalParameter>& formals,
             const char* role) {
    for (std::size_t i = 0; i < values.size() && !formals.empty(); ++i) {
      const bool past_end = i >= formals.size();
      const auto& formal = formals[past_end ? formals.size() - 1 : i];
      if (past_end && formal.GetOption() != onnx::OpSchema::Variadic) return;  // Verify refused counts
      if (values[i]) check_value(*values[i], formal, role);
    }
  }

 private:
  void check_value(const value& v, const onnx::OpSchema::FormalParameter& formal, const char* role) {
    // An initializer is a tensor of its own element type, declared or not.
    if (!v.type() && !v.is_initializer()) return;
    const allowed_types allowed = allowed_by(formal, s_);
    const std::string subject = std::string(role) + " '" + v.name() + "'";
    if (!v.is_initializer() && !v.type()->is_tensor) {
      if (!allowed.takes_non_tensors) refuse(n_, subject + " is not a tensor, but " + formal.GetName() + " of " + n_.op_type() + " must be one");
      return;
    }
    const data_type t = v.is_initializer() ? v.initializer()->dtype : v.type()->elem_type;
    if (t == data_type::undefined || allowed.takes_non_tensors) return;
    if (!allowed.allows(t)) {
      refuse(n_, subject + " is " + std::string(to_string(t)) + ", a type " + n_.op_type() + " does not take for " +
                     formal.GetName());
    }
    const bool homogeneous = formal.GetOption() != onnx::OpSchema::Variadic || formal.GetIsHomogeneous();
    if (!homogeneous) return;
    auto [bound, inserted] = bound_.try_emplace(formal.GetTypeStr(), t, v.name());
    if (!inserted && bound->second.first != t) {
      refuse(n_, subject + " is " + std::string(to_string(t)) + " but '" + bound->second.second + "' is " +
                     std::string(to_string(bound->second.first)) + ", and " + n_.op_type() + " needs one type for both");
    }
  }

  const node& n_;
  const schema_in_force& s_;
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

/// An empty name stands for an omitted input, which only an optional formal allows (the
/// library's `Verify` lets an empty variadic input through; onnxruntime refuses it).
void check_required_inputs(const node& n, const onnx::OpSchema& schema) {
  const auto& formals = schema.inputs();
  for (std::size_t i = 0; i < n.inputs().size() && !formals.empty(); ++i) {
    if (n.inputs()[i]) continue;
    const auto& formal = formals[std::min(i, formals.size() - 1)];
    if (formal.GetOption() != onnx::OpSchema::Optional) {
      refuse(n, "input " + std::to_string(i) + " (" + formal.GetName() + ") is required but empty");
    }
  }
}

}  // namespace

void check_schema(const node& n, std::int64_t opset) {
  check_attribute_types_present(n);
  const schema_in_force s = find_schema(n, opset);
  if (!s.schema) return;
  try {
    s.schema->Verify(schema_view(n));
  } catch (const std::exception& e) {
    refuse(n, one_line(e.what()));
  }
  check_required_inputs(n, *s.schema);
}

void check_type_constraints(const node& n, std::int64_t opset) {
  const schema_in_force s = find_schema(n, opset);
  if (!s.schema) return;
  type_binder binder(n, s);
  binder.check(n.inputs(), s.schema->inputs(), "input");
  binder.check(n.outputs(), s.schema->outputs(), "output");
}

}  // namespace inferopt::ir::validation
