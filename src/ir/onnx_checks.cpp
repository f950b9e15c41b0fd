// Bridges libonnx's checker and shape inference (a cross-check of our own) to the IR.

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "graph_access.hpp"
#include "inferopt/ir/verify.hpp"
#include "proto_bridge.hpp"

namespace inferopt::ir {
namespace {

/// Shape inference reads constant data only for small integer tensors (shapes, axes); large
/// weights are left out of the temporary message so it does not copy them.
bool keep_small_tensors(const tensor& t, onnx::TensorProto&) {
  constexpr std::size_t small = 64 * 1024;
  return t.byte_size() <= small || (t.dtype != data_type::float32 && t.dtype != data_type::float16 &&
                                    t.dtype != data_type::float64 && t.dtype != data_type::bfloat16);
}

std::size_t take_types(const onnx::GraphProto& gp, graph& g) {
  std::size_t typed = 0;
  auto take = [&](const onnx::ValueInfoProto& vi, bool mark) {
    value* v = g.find_value(vi.name());
    if (!v || !vi.has_type()) return;
    value_type t = detail::type_from_proto(vi.type());
    if (v->type() == t) return;
    v->set_type(std::move(t));
    ++typed;
    if (mark && v->origin() == value_origin::node_output && !graph_access::in_value_info(*v) && !v->is_graph_output()) {
      graph_access::in_value_info(*v) = true;
      graph_access::value_info_order(g).push_back(v);
    }
  };
  for (const auto& vi : gp.value_info()) take(vi, true);
  for (const auto& vi : gp.output()) take(vi, false);
  // Nodes appear in the same order in both, so subgraphs pair up by position.
  int k = 0;
  for (node* n : g.nodes()) {
    if (k >= gp.node_size()) break;
    const auto& np = gp.node(k++);
    std::vector<const onnx::GraphProto*> subs;
    for (const auto& a : np.attribute()) {
      if (a.has_g()) subs.push_back(&a.g());
      for (const auto& sg : a.graphs()) subs.push_back(&sg);
    }
    std::vector<graph*> ours = n->subgraphs();
    for (std::size_t s = 0; s < ours.size() && s < subs.size(); ++s) typed += take_types(*subs[s], *ours[s]);
  }
  return typed;
}

std::optional<std::string> unknown_opset(const model& m) {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const opset_import& o : m.opsets) {
    std::string domain = o.domain == "ai.onnx" ? "" : o.domain;
    auto it = ranges.find(domain);
    if (it != ranges.end() && o.version > it->second.second) {
      return "opset " + std::to_string(o.version) + " of domain '" + (domain.empty() ? "ai.onnx" : domain) +
             "' is newer than the ONNX library's (" + std::to_string(it->second.second) + "); shape inference skipped";
    }
  }
  return std::nullopt;
}

}  // namespace

shape_inference_report infer_shapes_with_onnx(model& m) {
  shape_inference_report report;
  if (auto note = unknown_opset(m)) {
    report.note = *note;
    return report;
  }
  onnx::ModelProto mp;
  detail::model_to_proto(m, mp, keep_small_tensors);
  try {
    onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    report.note = std::string("shape inference failed: ") + e.what();
    for (char& c : report.note) c = c == '\n' ? ' ' : c;
    return report;
  }
  report.ran = true;
  report.values_typed = take_types(mp.graph(), m.graph());
  return report;
}

void check_with_onnx(const model& m) {
  onnx::ModelProto mp;
  detail::model_to_proto(m, mp, [](const tensor&, onnx::TensorProto&) { return true; });
  try {
    onnx::checker::check_model(mp);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg) c = c == '\n' ? ' ' : c;
    throw error(errc::verification, "onnx checker: " + msg);
  }
}

}  // namespace inferopt::ir
