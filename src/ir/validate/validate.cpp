// The validation every command runs first: sizes, structure, schemas, then types.

#include "inferopt/ir/validate.hpp"

#include <optional>
#include <set>
#include <string>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/core/printable.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/verify.hpp"

namespace inferopt::ir {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw error(errc::invalid_model, what); }

/// Fan-in, fan-out and nesting, before anything walks the graph in ways that cost more.
void check_sizes(const graph& g, const model_limits& limits, std::size_t depth) {
  if (depth > limits.max_subgraph_depth) {
    refuse("subgraph '" + g.name() + "' is nested " + std::to_string(depth) + " deep, over the limit of " +
           std::to_string(limits.max_subgraph_depth));
  }
  for (const node* n : g.nodes()) {
    if (n->inputs().size() > limits.max_node_inputs) {
      refuse("node " + n->describe() + " has " + std::to_string(n->inputs().size()) + " inputs, over the limit of " +
             std::to_string(limits.max_node_inputs));
    }
    if (n->outputs().size() > limits.max_node_outputs) {
      refuse("node " + n->describe() + " has " + std::to_string(n->outputs().size()) + " outputs, over the limit of " +
             std::to_string(limits.max_node_outputs));
    }
    for (const graph* sub : n->subgraphs()) check_sizes(*sub, limits, depth + 1);
  }
}

template <class Check>
void for_each_node(const graph& g, const Check& check) {
  for (const node* n : g.nodes()) {
    check(*n);
    for (const graph* sub : n->subgraphs()) for_each_node(*sub, check);
  }
}

/// The fewest elements a tensor of shape `s` has (symbolic and unknown dims count as 1),
/// saturating at `cap + 1` so that no product overflows.
std::int64_t elements_up_to(const shape& s, std::int64_t cap) {
  std::int64_t n = 1;
  for (const dim& d : s) {
    if (!d.is_static()) continue;
    if (d.value() <= 0) return 0;
    if (n > cap / d.value()) return cap + 1;
    n *= d.value();
  }
  return n;
}

/// Declared or inferred dims: none negative, and no tensor past the element limit.
void check_tensor_sizes(const graph& g, const model_limits& limits) {
  for (const value* v : g.values()) {
    if (!v->type() || !v->type()->dims) continue;
    for (const dim& d : *v->type()->dims) {
      if (d.is_static() && d.value() < 0) {
        refuse("value '" + v->name() + "' has a negative dim (" + to_string(v->type()->dims) + ")");
      }
    }
    if (elements_up_to(*v->type()->dims, limits.max_tensor_elements) > limits.max_tensor_elements) {
      refuse("value '" + v->name() + "' (" + to_string(v->type()->dims) + ") has more than " +
             std::to_string(limits.max_tensor_elements) + " elements, the limit for one tensor");
    }
  }
  for (const node* n : g.nodes()) {
    for (const graph* sub : n->subgraphs()) check_tensor_sizes(*sub, limits);
  }
}

/// Declared tensor types name an element type ONNX defines (onnxruntime refuses 0 and
/// codes past the enum).
void check_declared_element_types(const graph& g) {
  for (const value* v : g.values()) {
    if (!v->type() || !v->type()->is_tensor) continue;
    const auto code = static_cast<std::int32_t>(v->type()->elem_type);
    if (code <= 0 || code > static_cast<std::int32_t>(data_type::int4)) {
      refuse("value '" + v->name() + "' declares element type " + std::to_string(code) + ", which is not an ONNX type");
    }
  }
  for (const node* n : g.nodes()) {
    for (const graph* sub : n->subgraphs()) check_declared_element_types(*sub);
  }
}

/// Initializers hold a defined element type ONNX knows; the loader carries any other as
/// opaque bytes, and nothing downstream could read them.
void check_initializer_types(const graph& g) {
  for (const value* v : g.initializers()) {
    const data_type t = v->initializer()->dtype;
    const auto code = static_cast<std::int32_t>(t);
    if (t == data_type::undefined || code < 0 || code > static_cast<std::int32_t>(data_type::int4)) {
      refuse("initializer '" + v->name() + "' has element type " + std::to_string(code) + ", which is not an ONNX type");
    }
  }
  for (const node* n : g.nodes()) {
    for (const graph* sub : n->subgraphs()) check_initializer_types(*sub);
  }
}

/// Names are protobuf strings, which must be UTF-8: onnxruntime's Python binding fails on a
/// name that is not, and so would any JSON report quoting it.
void check_names_are_utf8(const graph& g) {
  const auto check = [](std::string_view name, const char* what) {
    if (!is_utf8(name)) refuse(std::string(what) + " '" + printable(name) + "' is not valid UTF-8");
  };
  check(g.name(), "graph name");
  for (const value* v : g.values()) check(v->name(), "value name");
  for (const node* n : g.nodes()) {
    check(n->name(), "node name");
    check(n->op_type(), "op type");
    check(n->domain(), "domain");
    for (const attribute& a : n->attributes()) check(a.name, "attribute name");
    for (const graph* sub : n->subgraphs()) check_names_are_utf8(*sub);
  }
}

/// The IR versions and default-domain opsets the ONNX releases define and onnxruntime runs:
/// anything else is a broken or hostile header, and a model we wrote with it would not load.
void check_versions(const model& m) {
  if (m.ir_version < 3 || m.ir_version > 11) {
    refuse("IR version " + std::to_string(m.ir_version) + " is not one of ONNX's (3 to 11)");
  }
  std::set<std::string> domains;
  for (const opset_import& o : m.opsets) {
    if (!is_utf8(o.domain)) refuse("opset domain '" + printable(o.domain) + "' is not valid UTF-8");
    const std::string domain = o.domain == "ai.onnx" ? "" : o.domain;
    if (!domains.insert(domain).second) refuse("the model imports domain '" + o.domain + "' twice");
  }
  const std::optional<std::int64_t> opset = m.opset("");
  if (!opset) refuse("the model imports no ai.onnx opset");
  if (*opset < 7 || *opset > newest_known_opset) {
    refuse("ai.onnx opset " + std::to_string(*opset) + " is outside the opsets we read (7 to " +
           std::to_string(newest_known_opset) + ")");
  }
}

/// The domains onnxruntime registers operators in, and our own (docs/SPARSE_OPS.md). A node
/// elsewhere must call a model-local function: no runtime could load it otherwise, and
/// nothing could check it.
bool is_runtime_domain(std::string_view domain) {
  return domain == "ai.onnx.ml" || domain == "com.microsoft" || domain == "com.microsoft.nchwc" ||
         domain == "ai.onnx.preview.training" || domain == "inferopt";
}

void check_domain(const model& m, const node& n) {
  if (n.is_onnx_domain()) return;
  if (!m.opset(n.domain())) {
    refuse("node " + n.describe() + " is in domain '" + n.domain() + "', which the model does not import");
  }
  if (!is_runtime_domain(n.domain()) && !m.has_local_function(n.domain(), n.op_type())) {
    refuse("node " + n.describe() + " calls '" + n.domain() + "::" + n.op_type() +
           "', which is neither an operator onnxruntime or inferopt knows nor a function of the model");
  }
}

}  // namespace

void validate(const model& m, const model_limits& limits) {
  check_versions(m);
  if (m.graph().outputs().empty()) refuse("the graph has no outputs");
  check_sizes(m.graph(), limits, 0);
  check_names_are_utf8(m.graph());
  check_tensor_sizes(m.graph(), limits);
  check_initializer_types(m.graph());
  check_declared_element_types(m.graph());
  if (auto problems = find_problems(m.graph()); !problems.empty()) refuse(problems.front());
  // Each node is checked against the opset its own domain is imported at.
  const auto opset_of = [&m](const node& n) { return m.opset(n.domain()).value_or(0); };
  for_each_node(m.graph(), [&](const node& n) {
    check_domain(m, n);
    validation::check_schema(n, opset_of(n));
    validation::check_attribute_ranges(n);
  });
  // Types come from shape inference, on a copy: the model stays as its file has it.
  model typed = m.clone();
  infer_shapes(typed);
  for_each_node(typed.graph(), [&](const node& n) {
    validation::check_type_constraints(n, opset_of(n));
    validation::check_axes_against_ranks(n, opset_of(n));
    validation::check_operand_shapes(n);
    validation::check_subgraph_interfaces(n);
  });
  check_tensor_sizes(typed.graph(), limits);
}

}  // namespace inferopt::ir
