// Nodes against ONNX's operator schemas: counts, attributes and type constraints.
//
// The linked ONNX library knows opsets up to its own newest; a model at a newer opset is
// checked against the library's schema only where our table of definition changes
// (ir/opset/op_history) says nothing but element types changed since, and the types those
// later definitions added are allowed on top of the library's.

#include <limits>
#include <map>
#include <optional>
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
#include "../opset/op_history.hpp"

namespace inferopt::ir::validation {
namespace {

std::int64_t library_newest_opset() {
  static const std::int64_t newest = [] {
    const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = ranges.find("");
    return it == ranges.end() ? std::int64_t{0} : static_cast<std::int64_t>(it->second.second);
  }();
  return newest;
}

/// The schema that describes `n` at `opset`, and the element types definitions newer than
/// the library added; no schema when the library cannot speak for that definition.
struct schema_in_force {
  const onnx::OpSchema* schema = nullptr;
  std::vector<data_type> newer_types;
};

schema_in_force find_schema(const node& n, std::int64_t opset) {
  if (!n.is_onnx_domain() || opset <= 0) return {};
  const std::int64_t newest = library_newest_opset();
  const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min(opset, newest)), "");
  if (opset <= newest) {
    if (!schema) refuse(n, "ai.onnx opset " + std::to_string(opset) + " has no operator '" + n.op_type() + "'");
    return {schema, {}};
  }
  const opset::op_history* history = opset::find_history(n.op_type());
  if (!schema || !history) return {};
  schema_in_force found{schema, {}};
  for (const opset::definition& d : history->definitions) {
    if (d.since <= newest || d.since > opset) continue;
    if (!d.changes.empty() || d.deprecated) return {};
    found.newer_types.insert(found.newer_types.end(), d.types_added.begin(), d.types_added.end());
  }
  return found;
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

allowed_types allowed_by(const onnx::OpSchema::FormalParameter& p, const std::vector<data_type>& newer) {
  allowed_types out;
  for (const onnx::DataType& t : p.GetTypes()) {
    auto it = tensor_types().find(t);
    if (it != tensor_types().end()) out.elements.push_back(it->second);
    else out.takes_non_tensors = true;
  }
  out.elements.insert(out.elements.end(), newer.begin(), newer.end());
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
    if (!v.type()) return;
    const allowed_types allowed = allowed_by(formal, s_.newer_types);
    const std::string subject = std::string(role) + " '" + v.name() + "'";
    if (!v.type()->is_tensor) {
      if (!allowed.takes_non_tensors) refuse(n_, subject + " is not a tensor, but " + formal.GetName() + " of " + n_.op_type() + " must be one");
      return;
    }
    const data_type t = v.type()->elem_type;
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

/// Input and output counts of the definitions newer than the linked ONNX library knows, for
/// the ops whose inputs or attributes changed there (element-type-only changes are checked
/// through the library's schema). The widest count over those definitions.
struct io_counts {
  std::size_t min_inputs, max_inputs, min_outputs, max_outputs;
};

const std::unordered_map<std::string_view, io_counts>& newer_counts() {
  constexpr std::size_t many = std::numeric_limits<std::size_t>::max();
  static const std::unordered_map<std::string_view, io_counts> table = [] {
    std::unordered_map<std::string_view, io_counts> t{
        {"Split", {1, 2, 1, many}},         {"Pad", {2, 4, 1, 1}},          {"Resize", {1, 4, 1, 1}},
        {"AveragePool", {1, 1, 1, 1}},      {"MaxPool", {1, 1, 1, 2}},      {"LpPool", {1, 1, 1, 1}},
        {"GroupNormalization", {3, 3, 1, 1}}, {"Col2Im", {3, 3, 1, 1}},     {"ScatterElements", {3, 3, 1, 1}},
        {"ScatterND", {3, 3, 1, 1}},        {"Cast", {1, 1, 1, 1}},         {"CastLike", {2, 2, 1, 1}},
        {"ConstantOfShape", {1, 1, 1, 1}},  {"Constant", {0, 0, 1, 1}},     {"Identity", {1, 1, 1, 1}},
        {"Reshape", {2, 2, 1, 1}},          {"Shape", {1, 1, 1, 1}},        {"Size", {1, 1, 1, 1}},
        {"Flatten", {1, 1, 1, 1}},          {"Transpose", {1, 1, 1, 1}},    {"Squeeze", {1, 2, 1, 1}},
        {"Unsqueeze", {2, 2, 1, 1}},        {"QuantizeLinear", {2, 3, 1, 1}}, {"DequantizeLinear", {2, 3, 1, 1}},
        {"Equal", {2, 2, 1, 1}},            {"DeformConv", {3, 5, 1, 1}},   {"Gelu", {1, 1, 1, 1}},
        {"If", {1, 1, 1, many}},            {"Loop", {2, many, 1, many}},   {"Scan", {1, many, 1, many}},
        {"RMSNormalization", {2, 2, 1, 1}}, {"RotaryEmbedding", {3, 4, 1, 1}}, {"Attention", {3, 6, 1, 4}},
        {"TopK", {2, 2, 2, 2}},
    };
    for (std::string_view reduce : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
      t.emplace(reduce, io_counts{1, 2, 1, 1});
    }
    return t;
  }();
  return table;
}

bool is_reduction(const node& n) { return n.op_type().rfind("Reduce", 0) == 0; }

/// Ops whose inputs may be sequences, optionals or anything at all.
bool takes_any_value(const node& n) {
  return n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan" || n.op_type() == "Identity";
}

/// The input that holds axes, pads, shapes or counts (int64 in every definition), or none.
std::optional<std::size_t> index_input(const node& n) {
  if (is_reduction(n) || n.op_type() == "Squeeze" || n.op_type() == "Unsqueeze" || n.op_type() == "Split" ||
      n.op_type() == "Pad" || n.op_type() == "Reshape" || n.op_type() == "TopK") {
    return 1;
  }
  if (n.op_type() == "ConstantOfShape") return 0;
  return std::nullopt;
}

/// Element types for the definitions newer than the library, where no schema speaks: plain
/// tensors for every op but the control-flow ones, and int64 for the index inputs.
void check_newer_types(const node& n) {
  if (!newer_counts().count(n.op_type()) || takes_any_value(n)) return;
  const auto check = [&](std::span<value* const> values, const char* role) {
    for (const value* v : values) {
      if (v && v->type() && !v->type()->is_tensor) refuse(n, std::string(role) + " '" + v->name() + "' is not a tensor");
    }
  };
  check(n.inputs(), "input");
  check(n.outputs(), "output");
  const auto index = index_input(n);
  if (!index || *index >= n.inputs().size() || !n.inputs()[*index] || !n.inputs()[*index]->type()) return;
  const data_type t = n.inputs()[*index]->type()->elem_type;
  if (t != data_type::undefined && t != data_type::int64) {
    refuse(n, "input '" + n.inputs()[*index]->name() + "' is " + std::string(to_string(t)) + " but must be int64");
  }
}

void check_newer_counts(const node& n, std::int64_t opset) {
  // Reductions took their axes as an attribute until opset 18 (ReduceSum until 13).
  if (is_reduction(n) && opset >= 18 && n.find_attribute("axes")) refuse(n, "attribute 'axes' is an input since opset 18");
  auto it = newer_counts().find(n.op_type());
  if (it == newer_counts().end()) return;
  const io_counts& c = it->second;
  const auto within = [](std::size_t k, std::size_t lo, std::size_t hi) { return k >= lo && k <= hi; };
  if (!within(n.inputs().size(), c.min_inputs, c.max_inputs)) {
    refuse(n, "input size " + std::to_string(n.inputs().size()) + " not in range for " + n.op_type());
  }
  if (!within(n.outputs().size(), c.min_outputs, c.max_outputs)) {
    refuse(n, "output size " + std::to_string(n.outputs().size()) + " not in range for " + n.op_type());
  }
}

}  // namespace

void check_schema(const node& n, std::int64_t opset) {
  check_attribute_types_present(n);
  const schema_in_force s = find_schema(n, opset);
  if (!s.schema) {
    if (n.is_onnx_domain() && opset > library_newest_opset()) check_newer_counts(n, opset);
    return;
  }
  try {
    s.schema->Verify(schema_view(n));
  } catch (const std::exception& e) {
    refuse(n, one_line(e.what()));
  }
}

void check_type_constraints(const node& n, std::int64_t opset) {
  const schema_in_force s = find_schema(n, opset);
  if (!s.schema) {
    if (n.is_onnx_domain() && opset > library_newest_opset()) check_newer_types(n);
    return;
  }
  type_binder binder(n, s);
  binder.check(n.inputs(), s.schema->inputs(), "input");
  binder.check(n.outputs(), s.schema->outputs(), "output");
}

}  // namespace inferopt::ir::validation
