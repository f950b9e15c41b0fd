// JSON forms of the library's results (result_json.hpp).

#include "result_json.hpp"

#include <cmath>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt::tooling {
namespace {

nlohmann::json describe_values(std::span<ir::value* const> values) {
  nlohmann::json out = nlohmann::json::array();
  for (const ir::value* v : values) {
    if (v->is_initializer()) continue;  // IR < 4 lists weights as inputs
    out.push_back({{"name", v->name()},
                   {"type", std::string(ir::to_string(v->elem_type()))},
                   {"shape", v->type() ? ir::to_string(v->type()->dims) : "?"}});
  }
  return out;
}

/// a / b, or null when both are 0 (an empty plan); b is 0 only when a is.
nlohmann::json ratio(std::size_t a, std::size_t b) {
  if (b == 0) return nullptr;
  return static_cast<double>(a) / static_cast<double>(b);
}

/// JSON has no infinity: an SQNR of an exact tensor is null.
nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json to_json(const prune::layer_cost& c) {
  return {{"params", c.params}, {"macs", c.macs}, {"output_channels", c.output_channels}};
}

nlohmann::json latency_json(const prune::latency_report& l) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& t : l.attempts) {
    attempts.push_back({{"cost_ratio", t.cost_ratio}, {"predicted_speedup", t.predicted}, {"measured_speedup", t.measured}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (std::size_t i = 0; i < l.nodes.size(); ++i) {
    nodes.push_back({{"node", l.nodes[i].node}, {"op", l.nodes[i].op}, {"ms", l.nodes[i].ms},
                     {"predicted_ms", l.predicted_node_ms[i]}});
  }
  return {{"target_speedup", l.target}, {"threads", l.threads}, {"run_ms", l.run_ms},
          {"predicted_run_ms", l.predicted_run_ms}, {"measured_run_ms", l.measured_run_ms}, {"measured_reference_ms", l.measured_reference_ms},
          {"predicted_speedup", l.predicted_speedup}, {"measured_speedup", l.measured_speedup},
          {"attempts", attempts}, {"nodes", nodes}};
}

nlohmann::json groups_json(const prune::prune_summary& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : s.changed_groups) {
    nlohmann::json j{{"group", g.group}, {"units_before", g.units_before}, {"units_removed", g.units_removed},
                     {"importance_removed", g.importance_removed}};
    if (s.latency) j["ms_saved"] = g.ms_saved;
    if (g.cosine_drop) j["cosine_drop"] = *g.cosine_drop;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json refits_json(const prune::prune_summary& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const prune::reader_refit& r : s.refits) {
    nlohmann::json j{{"node", r.node}, {"inputs_before", r.inputs_before}, {"inputs_after", r.inputs_after}};
    if (r.skipped_because.empty()) {
      j["relative_error_cut"] = r.relative_error_cut;
      j["relative_error_refit"] = r.relative_error_refit;
    } else {
      j["skipped_because"] = r.skipped_because;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const ir::model_statistics& s) {
  return {{"nodes", s.nodes}, {"ops", s.ops},   {"params", s.params}, {"param_bytes", s.param_bytes},
          {"macs", s.macs},   {"macs_unknown_nodes", s.macs_unknown_nodes}};
}

nlohmann::json inspect_json(const ir::model& m, const ir::model_statistics& s, const ir::shape_inference_report& shapes) {
  nlohmann::json j = to_json(s);
  j["unknown_shapes"] = shapes.unknown_shapes;
  j["ops_without_shape_rules"] = shapes.unknown_ops;
  j["symbolic_dims"] = ir::symbolic_input_dims(m.graph());  // MACs count them as 1
  j["ir_version"] = m.ir_version;
  nlohmann::json opsets = nlohmann::json::object();
  for (const auto& o : m.opsets) opsets[o.domain.empty() ? "ai.onnx" : o.domain] = o.version;
  j["opsets"] = opsets;
  j["producer"] = m.producer_name + (m.producer_version.empty() ? "" : " " + m.producer_version);
  j["graph"] = m.graph().name();
  j["inputs"] = describe_values(m.graph().inputs());
  j["outputs"] = describe_values(m.graph().outputs());
  j["functions"] = m.function_count();
  return j;
}

nlohmann::json to_json(const run_report& r) {
  nlohmann::json passes = nlohmann::json::array();
  for (const pass_record& p : r.passes) {
    passes.push_back({{"name", p.name},
                      {"group", p.group},
                      {"runs", p.runs},
                      {"ms", p.milliseconds},
                      {"nodes_before", p.nodes_before},
                      {"nodes_after", p.nodes_after},
                      {"rewrites", p.rewrites},
                      {"changed", p.changed},
                      {"counters", p.counters}});
  }
  nlohmann::json fixpoints = nlohmann::json::array();
  for (const fixpoint_record& f : r.fixpoints) {
    fixpoints.push_back({{"pipeline", f.text}, {"iterations", f.iterations}, {"converged", f.converged}});
  }
  return {{"passes", passes}, {"fixpoints", fixpoints}, {"total_ms", r.milliseconds}, {"rollback_snapshots", r.snapshots}};
}

nlohmann::json plan_json(const runtime::graph_memory_plan& p, const runtime::graph_memory_options& options,
                         const ir::shape_inference_report& shapes) {
  nlohmann::json detail = nlohmann::json::array();
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    const memory::tensor_lifetime& t = p.tensors[i];
    detail.push_back({{"name", p.names[i]},
                      {"offset", p.plan.offsets[i]},
                      {"size", t.size},
                      {"first_use", t.first_use},
                      {"last_use", t.last_use},
                      {"in_place", static_cast<bool>(p.plan.in_place[i])}});
  }
  return {{"alignment", options.alignment},
          {"include_io", options.include_graph_inputs},
          {"in_place_enabled", options.in_place},
          {"shape_inference", {{"ran", shapes.ran}, {"note", shapes.note}, {"unknown_ops", shapes.unknown_ops}}},
          {"tensors", p.tensors.size()},
          {"steps", p.steps},
          {"arena_bytes", p.plan.arena_bytes},
          {"naive_bytes", p.plan.naive_bytes},
          {"lower_bound_bytes", p.plan.lower_bound_bytes},
          {"arena_over_lower_bound", ratio(p.plan.arena_bytes, p.plan.lower_bound_bytes)},
          {"arena_over_naive", ratio(p.plan.arena_bytes, p.plan.naive_bytes)},
          {"in_place", p.plan.in_place_count},
          {"unknown_size", p.unknown_size.size()},
          {"unknown_size_values", p.unknown_size},
          {"tensors_detail", detail}};
}

nlohmann::json to_json(const quant::quantize_result& r) {
  nlohmann::json sqnr = nlohmann::json::array();
  for (const auto& t : r.error.tensors) {
    sqnr.push_back({{"tensor", t.name}, {"node", t.producer}, {"op", t.producer_op}, {"sqnr_db", finite_or_null(t.sqnr_db)}});
  }
  return {{"nodes_quantized", r.qdq.nodes_quantized},
          {"activations_quantized", r.qdq.activations_quantized},
          {"weights_quantized", r.qdq.weights_quantized},
          {"weight_bits", r.qdq.weight_bits},
          {"biases_quantized", r.qdq.biases_quantized},
          {"left_in_float", r.qdq.skipped},
          {"fallback_nodes", r.fallback_nodes},
          {"top1_agreement", r.error.top1_agreement},
          {"samples", r.error.samples},
          {"output_cosine", r.error.output_cosine},
          {"sqnr", sqnr}};
}

nlohmann::json to_json(const quant::dynamic_report& r, const quant::quantization_error* error) {
  nlohmann::json j{{"mode", "dynamic"},
                   {"nodes_quantized", r.nodes_quantized},
                   {"activations_quantized", r.activations_quantized},
                   {"weights_quantized", r.weights_quantized},
                   {"weight_bits", r.weight_bits},
                   {"left_in_float", r.skipped}};
  if (error) {
    j["top1_agreement"] = error->top1_agreement;
    j["samples"] = error->samples;
    j["output_cosine"] = error->output_cosine;
  }
  return j;
}

nlohmann::json to_json(const quant::smooth_quant_report& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const quant::smoothed_activation& a : s.smoothed) {
    out.push_back({{"tensor", a.value}, {"layers", a.layers}, {"folded_into_norm", a.folded_into_norm},
                   {"outlier_ratio_before", a.outlier_ratio_before}, {"outlier_ratio_after", a.outlier_ratio_after}});
  }
  return out;
}

nlohmann::json to_json(const std::vector<prune::block_sparsity_layer>& layers) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& l : layers) {
    rows.push_back({{"node", l.node}, {"blocks_total", l.result.blocks_total}, {"blocks_removed", l.result.blocks_removed},
                    {"relative_error_magnitude", l.result.relative_error_magnitude},
                    {"relative_error", l.result.relative_error}, {"bias_updated", l.bias_updated}, {"sensitivity", l.sensitivity}});
  }
  return rows;
}

nlohmann::json to_json(const quant::range_table& ranges) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, r] : ranges) out[name] = {{"min", r.min}, {"max", r.max}};
  return out;
}

nlohmann::json to_json(const prune::prune_summary& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : s.layers) {
    layers.push_back({{"node", l.before.node}, {"op", l.before.op}, {"before", to_json(l.before)}, {"after", to_json(l.after)}});
  }
  return {{"groups", s.groups},
          {"prunable_groups", s.prunable_groups},
          {"prunable_channels", s.prunable_units},
          {"removed_channels", s.removed_units},
          {"cut_sites", s.applied.cut_sites},
          {"params", {{"before", s.params_before}, {"after", s.params_after}}},
          {"macs", {{"before", s.macs_before}, {"after", s.macs_after}}},
          {"budget_macs", s.budget_macs_before ? nlohmann::json{{"before", *s.budget_macs_before}, {"after", *s.budget_macs_after}}
                                               : nlohmann::json(nullptr)},
          {"layers", layers},
          {"groups_changed", groups_json(s)},
          {"sensitivity", to_json(s.sensitivity)},
          {"latency", s.latency ? latency_json(*s.latency) : nlohmann::json(nullptr)},
          {"refits", refits_json(s)}};
}

nlohmann::json to_json(const std::vector<prune::group_sensitivity>& sensitivity) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : sensitivity) out.push_back({{"group", g.group}, {"levels", g.levels}, {"cosine_drop", g.cosine_drop}});
  return out;
}

nlohmann::json to_json(const std::vector<sparse::sparsify_candidate>& plan) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& c : plan) {
    const bool rewritten = c.declined.empty();
    nodes.push_back({{"node", c.node},
                     {"op", c.op_type},
                     {"k", c.k},
                     {"n", c.n},
                     {"transposed", c.transposed},
                     {"rewritten", rewritten},
                     {"declined", rewritten ? nlohmann::json(nullptr) : nlohmann::json(c.declined)},
                     {"blocks_total", c.blocks_total},
                     {"blocks_kept", c.blocks_kept},
                     {"block_sparsity", c.block_sparsity},
                     {"relu_fused", c.fuses_relu},
                     {"predicted_speedup", rewritten ? finite_or_null(c.predicted_speedup) : nlohmann::json(nullptr)}});
  }
  return nodes;
}

nlohmann::json to_json(const std::vector<runtime::output_difference>& diffs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diffs) {
    out.push_back({{"name", d.name}, {"max_abs", d.max_abs}, {"max_rel", d.max_rel}, {"within", d.within},
                   {"problem", d.problem}});
  }
  return out;
}

}  // namespace inferopt::tooling
