#include "inferopt/quant/quantization_error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {
namespace {

bool is_float(ir::data_type t) { return t == ir::data_type::float32 || t == ir::data_type::float64 || t == ir::data_type::float16; }

struct accumulator {
  double signal = 0.0;
  double noise = 0.0;
  std::int64_t elements = 0;
};

/// Arg-max over the last axis for every row of a float tensor.
std::vector<std::int64_t> row_argmax(const runtime::tensor& t) {
  const std::vector<float> v = t.to_float();
  const std::int64_t cols = t.shape().empty() ? 1 : t.shape().back();
  std::vector<std::int64_t> out;
  if (cols <= 0) return out;
  for (std::size_t r = 0; r + static_cast<std::size_t>(cols) <= v.size(); r += static_cast<std::size_t>(cols)) {
    out.push_back(std::max_element(v.begin() + static_cast<std::ptrdiff_t>(r),
                                   v.begin() + static_cast<std::ptrdiff_t>(r) + cols) -
                  (v.begin() + static_cast<std::ptrdiff_t>(r)));
  }
  return out;
}

/// Sum over the first output's leading-axis slices of their float/quantized cosine, and their
/// count. A slice of zeros on both sides counts as 1 (they agree); on one side only, as 0.
std::pair<double, std::int64_t> slice_cosines(const runtime::tensor& reference, const runtime::tensor& quantized) {
  const std::vector<float> x = reference.to_float(), y = quantized.to_float();
  if (x.size() != y.size() || x.empty()) return {0.0, 0};
  const std::int64_t slices = reference.shape().empty() ? 1 : std::max<std::int64_t>(reference.shape().front(), 1);
  const std::size_t width = x.size() / static_cast<std::size_t>(slices);
  double sum = 0.0;
  for (std::int64_t s = 0; s < slices; ++s) {
    double xy = 0.0, xx = 0.0, yy = 0.0;
    for (std::size_t k = static_cast<std::size_t>(s) * width; k < static_cast<std::size_t>(s + 1) * width; ++k) {
      xy += static_cast<double>(x[k]) * y[k];
      xx += static_cast<double>(x[k]) * x[k];
      yy += static_cast<double>(y[k]) * y[k];
    }
    sum += xx == 0.0 && yy == 0.0 ? 1.0 : (xx == 0.0 || yy == 0.0 ? 0.0 : xy / std::sqrt(xx * yy));
  }
  return {sum, slices};
}

double decibels(const accumulator& a) {
  if (a.noise == 0.0) return std::numeric_limits<double>::infinity();
  if (a.signal == 0.0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(a.signal / a.noise);
}

}  // namespace

quantization_error measure_quantization_error(const ir::model& float_model, const ir::model& quantized_model,
                                              std::span<const runtime::tensor_map> batches) {
  // Tensors worth comparing: float node outputs of the float model that the quantized model
  // also computes under the same name.
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> producers;
  std::vector<std::string> order;
  for (const ir::node* n : float_model.graph().nodes()) {
    for (const ir::value* v : n->outputs()) {
      if (!v || !quantized_model.graph().find_value(v->name())) continue;
      producers[v->name()] = {n->name(), n->op_type()};
      order.push_back(v->name());
    }
  }
  std::map<std::string, runtime::tensor, std::less<>> reference;
  std::map<std::string, accumulator, std::less<>> sums;
  runtime::session_options float_options{.threads = 1};
  // The observed tensor is only valid during the call (its buffer is reused by later nodes
  // under the memory plan): keep a copy, or the reference turns into whatever was written there
  // next, which made every reported SQNR near 0 dB.
  float_options.on_value = [&](std::string_view name, const runtime::tensor& t) {
    if (producers.count(name) && is_float(t.dtype())) reference[std::string(name)] = t.clone();
  };
  runtime::session_options quant_options{.threads = 1};
  quant_options.on_value = [&](std::string_view name, const runtime::tensor& t) {
    auto r = reference.find(name);
    if (r == reference.end() || !is_float(t.dtype()) || r->second.element_count() != t.element_count()) return;
    const std::vector<float> x = r->second.to_float(), y = t.to_float();
    accumulator& a = sums[std::string(name)];
    for (std::size_t k = 0; k < x.size(); ++k) {
      // A non-finite value both models hold (a -inf attention mask) is no signal and no
      // noise (it made the SQNR NaN, inf - inf); where they differ, it is all noise.
      if (!std::isfinite(x[k])) {
        const bool same = x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k]));
        if (!same) a.noise = std::numeric_limits<double>::infinity();
        continue;
      }
      a.signal += static_cast<double>(x[k]) * x[k];
      a.noise += (static_cast<double>(x[k]) - y[k]) * (static_cast<double>(x[k]) - y[k]);
    }
    a.elements += static_cast<std::int64_t>(x.size());
  };
  runtime::session float_session(float_model, float_options);
  runtime::session quant_session(quantized_model, quant_options);

  quantization_error result;
  std::int64_t agree = 0;
  double cosines = 0.0;
  for (const runtime::tensor_map& batch : batches) {
    reference.clear();
    const runtime::tensor_map a = float_session.run(batch);
    const runtime::tensor_map b = quant_session.run(batch);
    const std::string& first = float_session.outputs().front().name;
    if (!a.count(first) || !b.count(first) || !is_float(a.at(first).dtype())) continue;
    const std::vector<std::int64_t> ra = row_argmax(a.at(first)), rb = row_argmax(b.at(first));
    for (std::size_t k = 0; k < ra.size() && k < rb.size(); ++k) agree += ra[k] == rb[k] ? 1 : 0;
    result.samples += static_cast<std::int64_t>(std::min(ra.size(), rb.size()));
    const auto [sum, count] = slice_cosines(a.at(first), b.at(first));
    cosines += sum;
    result.cosine_samples += count;
  }
  result.top1_agreement = result.samples ? static_cast<double>(agree) / static_cast<double>(result.samples) : 1.0;
  result.output_cosine = result.cosine_samples ? cosines / static_cast<double>(result.cosine_samples) : 1.0;
  for (const std::string& name : order) {
    auto s = sums.find(name);
    if (s == sums.end()) continue;
    const auto& [node, op] = producers.at(name);
    result.tensors.push_back({name, node, op, decibels(s->second), s->second.elements});
  }
  return result;
}

fallback_metric default_fallback_metric(const ir::model& m) {
  const auto& outputs = m.graph().outputs();
  if (outputs.empty()) return fallback_metric::top1;
  const ir::value* out = outputs.front();
  const bool rank2 = out->type() && out->type()->dims && out->type()->dims->size() == 2;
  if (!rank2) return fallback_metric::cosine;
  static const std::set<std::string, std::less<>> embedding_heads{
      "LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization", "Tanh", "Div", "ReduceMean",
      "LpNormalization", "SkipLayerNormalization"};
  const ir::node* head = out->producer();
  return head && embedding_heads.count(head->op_type()) ? fallback_metric::cosine : fallback_metric::top1;
}

std::string_view to_string(fallback_metric metric) { return metric == fallback_metric::cosine ? "cosine" : "top1"; }

bool within_budget(const quantization_error& error, const fallback_options& options) {
  if (options.metric == fallback_metric::cosine) return error.output_cosine >= options.min_output_cosine;
  return error.top1_agreement >= options.min_top1_agreement;
}

fallback_result fall_back_to_float(const ir::model& float_model,
                                   const std::function<ir::model(const std::vector<std::string>&)>& quantize,
                                   std::span<const runtime::tensor_map> batches, const fallback_options& options) {
  fallback_result r;
  std::set<std::string, std::less<>> quantizable;  // nodes the quantizer wraps: Q/DQ-fed ops
  for (;;) {
    r.quantized = quantize(r.excluded_nodes);
    const ir::model& q = r.quantized;
    r.final_error = measure_quantization_error(float_model, q, batches);
    if (within_budget(r.final_error, options)) {
      r.budget_met = true;
      return r;
    }
    if (static_cast<int>(r.excluded_nodes.size()) >= options.max_layers) return r;
    // Nodes the quantized model actually quantized: those reading a DequantizeLinear.
    quantizable.clear();
    for (const ir::node* n : q.graph().nodes()) {
      if (n->op_type() == "DequantizeLinear") continue;
      for (const ir::value* in : n->inputs()) {
        if (in && in->producer() && in->producer()->op_type() == "DequantizeLinear" && !n->name().empty()) {
          quantizable.insert(n->name());
        }
      }
    }
    // The worst quantized node by its output's SQNR goes back to float.
    const tensor_sqnr* worst = nullptr;
    for (const tensor_sqnr& t : r.final_error.tensors) {
      if (!quantizable.count(t.producer)) continue;
      if (std::find(r.excluded_nodes.begin(), r.excluded_nodes.end(), t.producer) != r.excluded_nodes.end()) continue;
      if (!worst || t.sqnr_db < worst->sqnr_db) worst = &t;
    }
    if (!worst) return r;  // nothing left to return to float
    r.excluded_nodes.push_back(worst->producer);
  }
}

}  // namespace inferopt::quant
