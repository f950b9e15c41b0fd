// GraphProto/ModelProto <-> IR. Every message keeps a "residual": the original message minus
// the parts we model. Scalars we model stay in the residual and are only overwritten when
// the IR holds a different value, so presence bits (proto2) survive a round trip; repeated
// fields and sub-messages we model are cleared from the residual and rebuilt on save.

#include <bit>
#include <unordered_set>
#include <utility>

#include "graph_access.hpp"
#include "proto_bridge.hpp"

namespace inferopt::ir::detail {
namespace {

using ga = graph_access;

/// Sets a proto2 optional string only if it would read differently otherwise.
template <class Msg, class Has, class Get, class Set>
void set_if_changed(Msg& m, Has has, Get get, Set set, const std::string& v) {
  if ((m.*has)() ? (m.*get)() == v : v.empty()) return;
  (m.*set)(v);
}

bool same_type_projection(const onnx::TypeProto& proto, const value_type& t) {
  return type_from_proto(proto) == t;
}

// ---------------------------------------------------------------------------------------
// Loading

struct graph_loader {
  const external_source& ext;

  void load(onnx::GraphProto& gp, graph& g) {
    // Inputs.
    for (auto& vi : *gp.mutable_input()) {
      value* v = ga::new_value(g, vi.name(), value_origin::graph_input);
      take_info(vi, *v);
      ga::add_graph_input(g, v);
    }
    // Initializers: attach to the input of the same name, or stand alone.
    for (auto& tp : *gp.mutable_initializer()) {
      tensor t = tensor_from_proto(tp, ext);
      value* v = g.find_value(t.name);
      if (v && v->is_graph_input() && !v->is_initializer()) {
        ga::set_initializer_raw(g, v, std::move(t));
      } else {
        v = ga::new_value(g, t.name, value_origin::initializer);
        v->set_type(value_type{true, t.dtype, shape(t.dims.begin(), t.dims.end())});
        ga::set_initializer_raw(g, v, std::move(t));
      }
    }
    for (const auto& sp : gp.sparse_initializer()) {
      if (!g.find_value(sp.values().name())) {
        ga::new_value(g, sp.values().name(), value_origin::declared_elsewhere);
      }
    }
    // Nodes in two sweeps: outputs first, so inputs of graphs stored out of order resolve.
    std::vector<node*> made;
    made.reserve(static_cast<std::size_t>(gp.node_size()));
    for (auto& np : *gp.mutable_node()) {
      node* n = ga::new_node(g, np.op_type(), np.domain(), np.name());
      for (const std::string& out : np.output()) {
        if (out.empty()) {
          ga::push_output_null(n);
        } else {
          ga::add_output_value(g, n, ga::new_value(g, out, value_origin::node_output));
        }
      }
      made.push_back(n);
    }
    for (int k = 0; k < gp.node_size(); ++k) {
      onnx::NodeProto& np = *gp.mutable_node(k);
      node* n = made[static_cast<std::size_t>(k)];
      for (const std::string& in : np.input()) ga::push_input(g, n, in.empty() ? nullptr : lookup(g, in));
      for (auto& ap : *np.mutable_attribute()) n->attributes().push_back(take_attribute(ap, g, n));
      np.clear_input();
      np.clear_output();
      np.clear_attribute();
      ga::residual(*n) = np.SerializeAsString();
    }
    // Outputs.
    for (auto& vi : *gp.mutable_output()) {
      value* v = lookup(g, vi.name());
      if (v->owner() == &g && ga::info_residual(*v).empty()) take_info(vi, *v);
      g.add_output(v);
    }
    // value_info: entries naming no value of this graph stay in the residual, verbatim.
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> stray;
    for (auto& vi : *gp.mutable_value_info()) {
      value* v = g.find_value(vi.name());
      if (!v || ga::in_value_info(*v)) {
        *stray.Add() = std::move(vi);
        continue;
      }
      if (ga::info_residual(*v).empty()) take_info(vi, *v);
      else take_type(vi, *v);
      ga::in_value_info(*v) = true;
      ga::declared_in_file(*v) = true;
      ga::value_info_order(g).push_back(v);
    }
    gp.clear_node();
    gp.clear_initializer();
    gp.clear_input();
    gp.clear_output();
    gp.mutable_value_info()->Swap(&stray);
    ga::residual(g) = gp.SerializeAsString();
    g.set_name(gp.name());

    if (!in_topological_order(g)) g.sort_topologically();
  }

  static value* lookup(graph& g, const std::string& name) {
    if (value* v = g.resolve(name)) return v;
    return ga::new_value(g, name, value_origin::undefined);
  }

  static void take_type(const onnx::ValueInfoProto& vi, value& v) {
    if (vi.has_type()) v.set_type(type_from_proto(vi.type()));
  }

  static void take_info(const onnx::ValueInfoProto& vi, value& v) {
    take_type(vi, v);
    ga::info_residual(v) = vi.SerializeAsString();
  }

  attribute take_attribute(onnx::AttributeProto& ap, graph& g, node* n) {
    attribute a;
    a.name = ap.name();
    a.kind = ap.has_type() ? static_cast<attribute_kind>(ap.type()) : inferred_kind(ap);
    a.f = ap.f();
    a.i = ap.i();
    a.s = ap.s();
    a.floats.assign(ap.floats().begin(), ap.floats().end());
    a.ints.assign(ap.ints().begin(), ap.ints().end());
    a.strings.assign(ap.strings().begin(), ap.strings().end());
    if (ap.has_t()) a.tensors.push_back(tensor_from_proto(*ap.mutable_t(), ext));
    for (auto& tp : *ap.mutable_tensors()) a.tensors.push_back(tensor_from_proto(tp, ext));
    if (ap.has_g()) a.graphs.push_back(subgraph(*ap.mutable_g(), g, n));
    for (auto& sub : *ap.mutable_graphs()) a.graphs.push_back(subgraph(sub, g, n));
    // Without a type field in the file we record "none" explicitly, so save omits it again.
    if (!ap.has_type()) ap.set_type(onnx::AttributeProto::UNDEFINED);
    ap.clear_floats();
    ap.clear_ints();
    ap.clear_strings();
    ap.clear_t();
    ap.clear_tensors();
    ap.clear_g();
    ap.clear_graphs();
    a.residual = ap.SerializeAsString();
    return a;
  }

  static attribute_kind inferred_kind(const onnx::AttributeProto& ap) {
    if (ap.has_f()) return attribute_kind::f;
    if (ap.has_i()) return attribute_kind::i;
    if (ap.has_s()) return attribute_kind::s;
    if (ap.has_t()) return attribute_kind::t;
    if (ap.has_g()) return attribute_kind::g;
    if (ap.floats_size()) return attribute_kind::floats;
    if (ap.ints_size()) return attribute_kind::ints;
    if (ap.strings_size()) return attribute_kind::strings;
    if (ap.tensors_size()) return attribute_kind::tensors;
    if (ap.graphs_size()) return attribute_kind::graphs;
    return attribute_kind::undefined;
  }

  std::unique_ptr<graph> subgraph(onnx::GraphProto& gp, graph& parent, node* owner) {
    auto sub = std::make_unique<graph>();
    ga::set_parent(*sub, parent, owner);
    load(gp, *sub);
    return sub;
  }

  static bool in_topological_order(const graph& g) {
    std::unordered_set<const node*> seen;
    for (node* n : g.nodes()) {
      if (!inputs_ready(g, n, seen)) return false;
      seen.insert(n);
    }
    return true;
  }

  static bool inputs_ready(const graph& g, const node* n, const std::unordered_set<const node*>& seen) {
    for (value* in : n->inputs()) {
      if (in && in->owner() == &g && in->producer() && !seen.count(in->producer())) return false;
    }
    // Values of this graph read from inside a subgraph must be ready too.
    for (graph* sub : n->subgraphs()) {
      for (node* inner : sub->nodes()) {
        if (!inputs_ready(g, inner, seen)) return false;
      }
    }
    return true;
  }
};

// ---------------------------------------------------------------------------------------
// Saving

struct graph_writer {
  const tensor_sink& sink;
  /// IR versions up to 3 require every initializer of the main graph to be a graph input as
  /// well (onnx's checker refuses the model otherwise). A pass that adds an initializer to
  /// such a model (fold-constants, fusions) need not know that: the writer lists it.
  bool initializers_are_inputs = false;
  bool only_loaded_value_info = false;  // save_options::value_info == as_loaded

  void write(const graph& g, onnx::GraphProto& gp) {
    gp.ParseFromString(ga::residual(g));
    set_if_changed(gp, &onnx::GraphProto::has_name, &onnx::GraphProto::name,
                   static_cast<void (onnx::GraphProto::*)(const std::string&)>(&onnx::GraphProto::set_name), g.name());
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> stray;
    stray.Swap(gp.mutable_value_info());

    for (value* v : g.inputs()) write_info(*v, *gp.add_input());
    if (std::exchange(initializers_are_inputs, false)) {  // subgraphs keep their own inputs
      for (value* v : g.initializers()) {
        if (v->is_graph_input()) continue;
        onnx::ValueInfoProto& vi = *gp.add_input();
        vi.set_name(v->name());
        const tensor& t = *v->initializer();
        type_to_proto(value_type{true, t.dtype, shape(t.dims.begin(), t.dims.end())}, *vi.mutable_type());
      }
    }
    for (value* v : g.initializers()) tensor_to_proto(*v->initializer(), *gp.add_initializer(), sink);
    const std::vector<std::string> node_names = distinct_node_names(g);
    std::size_t k = 0;
    for (node* n : g.nodes()) write_node(*n, node_names[k++], *gp.add_node());
    for (value* v : g.outputs()) write_info(*v, *gp.add_output());
    for (value* v : ga::value_info_order(g)) {
      if (v->is_dead() || !ga::in_value_info(*v) || lacks_element_type(*v)) continue;
      if (only_loaded_value_info && !ga::declared_in_file(*v)) continue;
      write_info(*v, *gp.add_value_info());
    }
    // Types that passes or builders gave to node outputs are written too, after the loaded
    // entries (a loaded value without value_info has no type, so round trips are unchanged).
    if (!only_loaded_value_info) {
      for (node* n : g.nodes()) {
        for (value* v : n->outputs()) {
          if (v && v->type() && !lacks_element_type(*v) && !ga::in_value_info(*v) && !v->is_graph_output()) {
            write_info(*v, *gp.add_value_info());
          }
        }
      }
    }
    for (auto& vi : stray) *gp.add_value_info() = std::move(vi);
  }

  /// A tensor type without an element type (what shape inference leaves where it knows a
  /// rank and no type) is written as no type: onnxruntime refuses elem_type 0.
  static bool lacks_element_type(const value& v) {
    return v.type() && v.type()->is_tensor && v.type()->elem_type == data_type::undefined;
  }

  static void write_info(const value& v, onnx::ValueInfoProto& vi) {
    vi.ParseFromString(ga::info_residual(v));
    set_if_changed(vi, &onnx::ValueInfoProto::has_name, &onnx::ValueInfoProto::name,
                   static_cast<void (onnx::ValueInfoProto::*)(const std::string&)>(&onnx::ValueInfoProto::set_name),
                   v.name());
    if (!v.type() || lacks_element_type(v)) {
      vi.clear_type();
    } else if (!(vi.has_type() && same_type_projection(vi.type(), *v.type()))) {
      if (v.type()->is_tensor) {
        vi.clear_type();
        type_to_proto(*v.type(), *vi.mutable_type());
      }
    }
  }

  /// The names the nodes of `g` are written under, in order: a name an earlier node of the
  /// graph has already gets a fresh suffix. onnxruntime refuses a graph with two nodes of one
  /// name, and a loaded file may have them (new nodes never repeat a name: see node_spec).
  static std::vector<std::string> distinct_node_names(const graph& g) {
    name_counts taken;
    for (const node* n : g.nodes()) taken.add(n->name());
    name_counts written;
    name_stems stems;
    std::vector<std::string> out;
    out.reserve(g.node_count());
    for (const node* n : g.nodes()) {
      std::string name = n->name();
      if (!name.empty() && written.contains(name)) {
        name = stems.fresh(name, [&](std::string_view c) { return taken.contains(c); });
        taken.add(name);
      }
      written.add(name);
      out.push_back(std::move(name));
    }
    return out;
  }

  void write_node(const node& n, const std::string& name, onnx::NodeProto& np) {
    np.ParseFromString(ga::residual(n));
    using setter = void (onnx::NodeProto::*)(const std::string&);
    set_if_changed(np, &onnx::NodeProto::has_name, &onnx::NodeProto::name, static_cast<setter>(&onnx::NodeProto::set_name),
                   name);
    set_if_changed(np, &onnx::NodeProto::has_op_type, &onnx::NodeProto::op_type,
                   static_cast<setter>(&onnx::NodeProto::set_op_type), n.op_type());
    set_if_changed(np, &onnx::NodeProto::has_domain, &onnx::NodeProto::domain,
                   static_cast<setter>(&onnx::NodeProto::set_domain), n.domain());
    for (value* in : n.inputs()) np.add_input(in ? in->name() : std::string());
    for (value* out : n.outputs()) np.add_output(out ? out->name() : std::string());
    for (const attribute& a : n.attributes()) write_attribute(a, *np.add_attribute());
  }

  void write_attribute(const attribute& a, onnx::AttributeProto& ap) {
    ap.ParseFromString(a.residual);
    using setter = void (onnx::AttributeProto::*)(const std::string&);
    set_if_changed(ap, &onnx::AttributeProto::has_name, &onnx::AttributeProto::name,
                   static_cast<setter>(&onnx::AttributeProto::set_name), a.name);
    if (ap.has_type() && ap.type() == onnx::AttributeProto::UNDEFINED) {
      ap.clear_type();  // the file had no type field (see take_attribute)
    } else {
      ap.set_type(static_cast<onnx::AttributeProto::AttributeType>(a.kind));
    }
    switch (a.kind) {
      case attribute_kind::f:
        if (!(ap.has_f() && std::bit_cast<std::uint32_t>(ap.f()) == std::bit_cast<std::uint32_t>(a.f))) ap.set_f(a.f);
        break;
      case attribute_kind::i:
        if (!(ap.has_i() && ap.i() == a.i)) ap.set_i(a.i);
        break;
      case attribute_kind::s:
        if (!(ap.has_s() && ap.s() == a.s)) ap.set_s(a.s);
        break;
      default: break;
    }
    for (float v : a.floats) ap.add_floats(v);
    for (std::int64_t v : a.ints) ap.add_ints(v);
    for (const std::string& v : a.strings) ap.add_strings(v);
    if (a.kind == attribute_kind::t && !a.tensors.empty()) {
      tensor_to_proto(a.tensors.front(), *ap.mutable_t(), sink);
    } else {
      for (const tensor& t : a.tensors) tensor_to_proto(t, *ap.add_tensors(), sink);
    }
    if (a.kind == attribute_kind::g && !a.graphs.empty()) {
      write(*a.graphs.front(), *ap.mutable_g());
    } else {
      for (const auto& g : a.graphs) write(*g, *ap.add_graphs());
    }
  }
};

}  // namespace

value_type type_from_proto(const onnx::TypeProto& t) {
  value_type out;
  if (!t.has_tensor_type()) {
    out.is_tensor = false;
    return out;
  }
  const auto& tt = t.tensor_type();
  out.elem_type = static_cast<data_type>(tt.elem_type());
  if (tt.has_shape()) {
    shape s;
    s.reserve(static_cast<std::size_t>(tt.shape().dim_size()));
    for (const auto& d : tt.shape().dim()) {
      dim x;
      if (d.has_dim_value()) x.size = static_cast<std::int64_t>(d.dim_value());
      else if (d.has_dim_param()) x.size = d.dim_param();
      x.denotation = d.denotation();
      s.push_back(std::move(x));
    }
    out.dims = std::move(s);
  }
  return out;
}

void type_to_proto(const value_type& t, onnx::TypeProto& proto) {
  auto* tt = proto.mutable_tensor_type();
  if (t.elem_type != data_type::undefined) tt->set_elem_type(static_cast<int>(t.elem_type));
  if (!t.dims) return;
  auto* s = tt->mutable_shape();
  for (const dim& d : *t.dims) {
    auto* pd = s->add_dim();
    if (d.is_static()) pd->set_dim_value(d.value());
    else if (d.is_symbolic()) pd->set_dim_param(d.param());
    if (!d.denotation.empty()) pd->set_denotation(d.denotation);
  }
}

model model_from_proto(onnx::ModelProto& mp, const external_source& ext) {
  model m;
  m.ir_version = mp.ir_version();
  for (const auto& o : mp.opset_import()) m.opsets.push_back({o.domain(), o.version()});
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc_string = mp.doc_string();
  for (const auto& kv : mp.metadata_props()) m.metadata.emplace_back(kv.key(), kv.value());
  for (const auto& f : mp.functions()) ga::local_functions(m).push_back({f.domain(), f.name()});
  graph_loader loader{ext};
  loader.load(*mp.mutable_graph(), m.graph());
  mp.clear_graph();
  // opset_import and metadata_props stay in the residual: save rebuilds them only when the
  // IR's copy differs, which keeps presence bits of their fields.
  ga::residual(m) = mp.SerializeAsString();
  return m;
}

void model_to_proto(const model& m, onnx::ModelProto& mp, const tensor_sink& sink, bool only_loaded_value_info) {
  mp.ParseFromString(ga::residual(m));
  if (!(mp.has_ir_version() && mp.ir_version() == m.ir_version)) mp.set_ir_version(m.ir_version);
  std::vector<opset_import> stored_opsets;
  for (const auto& o : mp.opset_import()) stored_opsets.push_back({o.domain(), o.version()});
  if (stored_opsets != m.opsets) {
    mp.clear_opset_import();
    for (const opset_import& o : m.opsets) {
      auto* op = mp.add_opset_import();
      op->set_domain(o.domain);
      op->set_version(o.version);
    }
  }
  using setter = void (onnx::ModelProto::*)(const std::string&);
  set_if_changed(mp, &onnx::ModelProto::has_producer_name, &onnx::ModelProto::producer_name,
                 static_cast<setter>(&onnx::ModelProto::set_producer_name), m.producer_name);
  set_if_changed(mp, &onnx::ModelProto::has_producer_version, &onnx::ModelProto::producer_version,
                 static_cast<setter>(&onnx::ModelProto::set_producer_version), m.producer_version);
  set_if_changed(mp, &onnx::ModelProto::has_domain, &onnx::ModelProto::domain,
                 static_cast<setter>(&onnx::ModelProto::set_domain), m.domain);
  set_if_changed(mp, &onnx::ModelProto::has_doc_string, &onnx::ModelProto::doc_string,
                 static_cast<setter>(&onnx::ModelProto::set_doc_string), m.doc_string);
  if (!(mp.has_model_version() ? mp.model_version() == m.model_version : m.model_version == 0)) {
    mp.set_model_version(m.model_version);
  }
  std::vector<std::pair<std::string, std::string>> stored_metadata;
  for (const auto& kv : mp.metadata_props()) stored_metadata.emplace_back(kv.key(), kv.value());
  if (stored_metadata != m.metadata) {
    mp.clear_metadata_props();
    for (const auto& [k, v] : m.metadata) {
      auto* kv = mp.add_metadata_props();
      kv->set_key(k);
      kv->set_value(v);
    }
  }
  graph_writer writer{sink, m.ir_version <= 3, only_loaded_value_info};
  writer.write(m.graph(), *mp.mutable_graph());
}

}  // namespace inferopt::ir::detail
