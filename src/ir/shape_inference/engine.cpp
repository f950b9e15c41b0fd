// Walks the main graph in order, applies each op's rule, and reconciles the result with what
// the model declares.

#include <algorithm>
#include <cstring>
#include <set>

#include "../graph_access.hpp"
#include "inference_context.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/shape_inference.hpp"

namespace inferopt::ir {
namespace shape_inference_detail {
namespace {

template <class T>
T read_as(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool is_integer_like(data_type t) {
  return t == data_type::int64 || t == data_type::int32 || t == data_type::boolean;
}

value_facts declared_facts(const std::optional<value_type>& t, const shape_inference_options& options) {
  value_facts f;
  if (!t || !t->is_tensor) return f;
  f.elem = t->elem_type;
  if (t->dims) {
    f.dims = to_sym_shape(*t->dims);
    if (!options.dim_values.empty()) {
      for (sym_dim& d : *f.dims) d = d.substitute(options.dim_values);
    }
  }
  return f;
}

class engine {
 public:
  engine(const model& versions, const shape_inference_options& options) : model_(versions), options_(options) {}

  shape_inference_report run(graph& g) {
    const std::int64_t opset = model_.opset("").value_or(1);
    if (opset > newest_known_opset) {
      report_.note = "opset " + std::to_string(opset) + " is newer than the shape rules know (" +
                     std::to_string(newest_known_opset) + "); shape inference skipped";
      return report_;
    }
    for (value* v : g.inputs()) facts_[v] = declared_facts(v->type(), options_);
    infer_graph(g);
    for (value* v : g.inputs()) record(*v, facts_[v]);
    report_.ran = true;
    report_.unknown_ops.assign(unknown_ops_.begin(), unknown_ops_.end());
    report_.unknown_shapes = count_unknown_shapes(g);
    return report_;
  }

 private:
  /// The graph's constants, then its nodes in order. A subgraph reads its enclosing graphs'
  /// values directly (they are the same values), so their facts are already here.
  void infer_graph(graph& g) {
    for (value* v : g.values()) {
      if (const tensor* t = constant_tensor(v, model_.ir_version)) facts_[v] = facts_of_tensor(*t);
    }
    const std::int64_t opset = model_.opset("").value_or(1);
    for (node* n : g.nodes()) infer_node(*n, n->is_onnx_domain() ? opset : model_.opset(n->domain()).value_or(1));
  }

  /// If: both branches inferred, and each output what they agree on. Other ops with
  /// subgraphs (Loop, Scan: their bodies' inputs change per iteration) stay unknown.
  bool infer_if(node& n, inference_context& ctx) {
    graph* then_branch = n.subgraph("then_branch");
    graph* else_branch = n.subgraph("else_branch");
    // Nesting is bounded by validation; the cap keeps a direct caller's stack safe too.
    if (!n.is("If") || !then_branch || !else_branch || if_depth_ >= max_if_depth) return false;
    ++if_depth_;
    infer_graph(*then_branch);
    infer_graph(*else_branch);
    --if_depth_;
    for (std::size_t i = 0; i < n.outputs().size(); ++i) {
      if (i >= then_branch->outputs().size() || i >= else_branch->outputs().size()) break;
      ctx.outputs()[i] = agreement(facts_[then_branch->outputs()[i]], facts_[else_branch->outputs()[i]]);
    }
    return true;
  }

  /// What two branch results share: the element type, and the dims both give alike.
  static value_facts agreement(const value_facts& a, const value_facts& b) {
    value_facts out;
    if (a.elem == b.elem || b.elem == data_type::undefined) out.elem = a.elem;
    else if (a.elem == data_type::undefined) out.elem = b.elem;
    if (a.dims && b.dims && a.dims->size() == b.dims->size()) {
      out.dims = a.dims;
      for (std::size_t i = 0; i < out.dims->size(); ++i) {
        if (!((*out.dims)[i] == (*b.dims)[i])) (*out.dims)[i] = sym_dim{};
      }
    }
    return out;
  }

  void infer_node(node& n, std::int64_t opset) {
    std::vector<const value_facts*> inputs;
    std::vector<const tensor*> constants;
    for (value* v : n.inputs()) {
      inputs.push_back(v ? &facts_[v] : nullptr);
      constants.push_back(constant_of_value(v));
    }
    inference_context ctx(n, opset, std::move(inputs), std::move(constants));
    const rule_table& rules = builtin_rules();
    auto rule = rules.find(n.is_onnx_domain() ? n.op_type() : n.domain() + "." + n.op_type());
    if (!n.subgraphs().empty()) {
      if (!infer_if(n, ctx)) unknown_ops_.insert((n.is_onnx_domain() ? "" : n.domain() + ".") + n.op_type());
    } else if (rule == rules.end()) {
      unknown_ops_.insert((n.is_onnx_domain() ? "" : n.domain() + ".") + n.op_type());
    } else {
      try {
        rule->second(ctx);
      } catch (const error& e) {
        throw error(errc::invalid_model, "node " + n.describe() + ": " + e.what());
      }
    }
    for (std::size_t i = 0; i < n.outputs().size(); ++i) {
      value* out = n.outputs()[i];
      if (!out) continue;
      facts_[out] = reconcile(n, *out, std::move(ctx.outputs()[i]));
      record(*out, facts_[out]);
    }
  }

  const tensor* constant_of_value(const value* v) const {
    if (!v) return nullptr;
    if (const tensor* t = constant_tensor(v, model_.ir_version)) return t;
    const node* p = v->producer();
    if (p && p->is("Constant")) {
      const attribute* a = p->find_attribute("value");
      if (a && a->kind == attribute_kind::t && !a->tensors.empty()) return &a->tensors[0];
    }
    return nullptr;
  }

  /// Computed facts win where they know more; a declared number that contradicts a
  /// computed one is the model's error in `check` mode.
  value_facts reconcile(const node& n, const value& out, value_facts computed) {
    const value_facts declared = declared_facts(out.type(), options_);
    const bool check = options_.declared == shape_inference_options::declared_types::check;
    auto contradiction = [&](const std::string& what) {
      throw error(errc::invalid_model, "node " + n.describe() + ": output '" + out.name() + "' " + what);
    };
    if (computed.elem == data_type::undefined) computed.elem = declared.elem;
    else if (check && declared.elem != data_type::undefined && declared.elem != computed.elem) {
      contradiction("is declared " + std::string(to_string(declared.elem)) + " but computes " + std::string(to_string(computed.elem)));
    }
    if (!declared.dims) return computed;
    if (!computed.dims) {
      computed.dims = declared.dims;
      return computed;
    }
    if (declared.dims->size() != computed.dims->size()) {
      if (check) contradiction("is declared " + to_string(*declared.dims) + " but computes " + to_string(*computed.dims));
      return computed;
    }
    for (std::size_t i = 0; i < computed.dims->size(); ++i) {
      sym_dim& c = (*computed.dims)[i];
      const sym_dim& d = (*declared.dims)[i];
      const auto cc = c.constant(), dc = d.constant();
      if (check && cc && dc && *cc != *dc) {
        contradiction("is declared " + to_string(*declared.dims) + " but computes " + to_string(*computed.dims));
      }
      if (!c.known() || (dc && !cc)) c = d;
    }
    return computed;
  }

  void record(value& v, const value_facts& f) {
    if (f.elem == data_type::undefined && !f.dims) return;
    if (v.type() && !v.type()->is_tensor) return;
    value_type t{true, f.elem, f.dims ? std::optional<shape>(to_shape(*f.dims)) : std::nullopt};
    if (v.type() == t) return;
    v.set_type(std::move(t));
    ++report_.values_typed;
    if (v.origin() == value_origin::node_output && !graph_access::in_value_info(v) && !v.is_graph_output()) {
      graph_access::in_value_info(v) = true;
      graph_access::value_info_order(*v.owner()).push_back(&v);
    }
  }

  const model& model_;  // ir_version and opsets
  const shape_inference_options& options_;
  std::unordered_map<const value*, value_facts> facts_;
  std::set<std::string> unknown_ops_;
  static constexpr int max_if_depth = 64;
  int if_depth_ = 0;
  shape_inference_report report_;
};

}  // namespace

std::optional<std::vector<std::int64_t>> inference_context::ints(std::size_t i) const {
  const value_facts& f = input(i);
  if (!f.values) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const sym_dim& d : *f.values) {
    auto c = d.constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::optional<std::vector<std::int64_t>> inference_context::int_list(const char* attr, std::size_t index,
                                                                     std::int64_t since) const {
  if (opset_ < since) {
    if (const attribute* a = node_.find_attribute(attr)) return a->ints;
    return std::vector<std::int64_t>{};
  }
  if (!has_input(index)) return std::vector<std::int64_t>{};
  return ints(index);
}

sym_dim inference_context::data_dependent_dim(std::size_t output, std::size_t axis) const {
  const value* out = node_.output(output);
  const std::string base = out && !out->name().empty() ? out->name() : node_.op_type();
  return sym_dim::named(base + "_dim_" + std::to_string(axis));
}

value_facts facts_of_tensor(const tensor& t) {
  value_facts f = value_facts::of(t.dtype, sym_shape(t.dims.begin(), t.dims.end()));
  if (!trackable(t.dtype, *f.dims) || !t.has_data()) return f;
  const std::size_t width = t.dtype == data_type::int64 ? 8 : t.dtype == data_type::int32 ? 4 : 1;
  if (t.byte_size() != static_cast<std::size_t>(t.element_count()) * width) return f;  // malformed: no values
  std::vector<sym_dim> values;
  const char* bytes = t.bytes->data();
  for (std::int64_t i = 0; i < t.element_count(); ++i) {
    if (width == 8) values.emplace_back(read_as<std::int64_t>(bytes + 8 * i));
    else if (width == 4) values.emplace_back(std::int64_t{read_as<std::int32_t>(bytes + 4 * i)});
    else values.emplace_back(std::int64_t{bytes[i] != 0});
  }
  f.values = std::move(values);
  return f;
}

void same_as_input(inference_context& ctx) { ctx.set_output(0, ctx.input(0)); }

bool trackable(data_type t, const sym_shape& dims) {
  if (!is_integer_like(t) || dims.size() > 1) return false;
  const auto n = constant_of(shape_rules::product<sym_dim>(dims));
  return n && *n >= 0 && static_cast<std::size_t>(*n) <= max_tracked_elements;
}

std::optional<std::vector<sym_dim>> broadcast_values(const value_facts& a, const value_facts& b,
                                                     sym_dim (*op)(const sym_dim&, const sym_dim&)) {
  if (!a.values || !b.values) return std::nullopt;
  const std::size_t na = a.values->size(), nb = b.values->size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  if (na == 0 || nb == 0) return std::vector<sym_dim>{};  // an empty operand broadcasts to empty
  std::vector<sym_dim> out;
  for (std::size_t i = 0; i < std::max(na, nb); ++i) out.push_back(op((*a.values)[na == 1 ? 0 : i], (*b.values)[nb == 1 ? 0 : i]));
  return out;
}

const rule_table& builtin_rules() {
  static const rule_table table = [] {
    rule_table t;
    register_elementwise_rules(t);
    register_nn_rules(t);
    register_layout_rules(t);
    register_indexing_rules(t);
    register_shape_value_rules(t);
    register_reduce_rules(t);
    register_quantize_rules(t);
    return t;
  }();
  return table;
}

}  // namespace shape_inference_detail

shape_inference_report infer_shapes(model& m, const shape_inference_options& options) {
  return shape_inference_detail::engine(m, options).run(m.graph());
}

shape_inference_report infer_shapes(graph& g, const model& versions, const shape_inference_options& options) {
  return shape_inference_detail::engine(versions, options).run(g);
}

std::vector<std::string> symbolic_input_dims(const graph& g) {
  std::vector<std::string> names;
  for (const value* v : g.inputs()) {
    if (!v->type() || !v->type()->dims) continue;
    for (const dim& d : *v->type()->dims) {
      if (d.is_symbolic() && std::find(names.begin(), names.end(), d.param()) == names.end()) names.push_back(d.param());
    }
  }
  return names;
}

std::size_t count_unknown_shapes(const graph& g) {
  std::size_t unknown = 0;
  for (const node* n : g.nodes()) {
    for (const value* v : n->outputs()) {
      if (!v || (v->type() && !v->type()->is_tensor)) continue;
      bool known = v->type() && v->type()->dims;
      if (known) {
        for (const dim& d : *v->type()->dims) known = known && (d.is_static() || d.is_symbolic());
      }
      unknown += known ? 0 : 1;
    }
  }
  return unknown;
}

}  // namespace inferopt::ir
