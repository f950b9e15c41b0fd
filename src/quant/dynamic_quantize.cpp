#include "inferopt/quant/dynamic_quantize.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/convert_opset.hpp"
#include "int8_weights.hpp"

namespace inferopt::quant {

namespace {

using detail::add_constant;
using detail::int8_weight;

/// One MatMul or Gemm that will be quantized; every check was made when this exists.
struct linear_plan {
  ir::node* node = nullptr;
  bool transposed = false;  // Gemm with transB = 1: the weight is [N, K]
  ir::value* bias = nullptr;  // Gemm's C, added after the rescale
};

/// Why `n` cannot be quantized dynamically, or empty (and `p` filled).
std::string plan_linear(ir::node& n, std::int64_t ir_version, linear_plan& p) {
  ir::value* x = n.input(0);
  if (!x || ir::is_constant(*x, ir_version)) return "the activation input is a constant or omitted";
  if (x->elem_type() != ir::data_type::float32 && x->elem_type() != ir::data_type::undefined) return "the input is not float";
  const ir::tensor* w = n.input(1) ? ir::constant_tensor(n.input(1), ir_version) : nullptr;
  if (!w && n.input(1)) return "B is an activation, not weights";
  if (!w || w->dtype != ir::data_type::float32 || w->dims.size() != 2) return "the weight is not a constant float32 matrix";
  p.node = &n;
  if (n.is("Gemm")) {
    if (n.attr_int("transA", 0) != 0) return "transA = 1";
    const bool has_bias = n.inputs().size() > 2 && n.input(2);
    if (n.attr_float("alpha", 1.0f) != 1.0f || (has_bias && n.attr_float("beta", 1.0f) != 1.0f)) return "alpha or beta is not 1";
    p.transposed = n.attr_int("transB", 0) != 0;
    if (has_bias) p.bias = n.input(2);
  }
  if (n.outputs().size() != 1 || !n.output(0)) return "not exactly one output";
  return {};
}

/// The int8 weight as [K, N] with its column scales; transposed from [N, K] when asked.
int8_weight quantized_kn(ir::value* w, std::int64_t ir_version, bool transposed, bool per_channel, int largest_code) {
  const std::int64_t column_axis = transposed ? 0 : 1;
  int8_weight q = detail::quantize_int8_weight(w, *ir::constant_floats(w, ir_version),
                                                per_channel ? column_axis : detail::per_tensor_axis, largest_code);
  if (!transposed) return q;
  const std::int64_t n = q.dims[0];
  const std::int64_t k = q.dims[1];
  std::vector<std::int8_t> kn(q.values.size());
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) kn[static_cast<std::size_t>(c * n + r)] = q.values[static_cast<std::size_t>(r * k + c)];
  }
  q.values = std::move(kn);
  q.dims = {k, n};
  q.axis = q.axis == detail::per_tensor_axis ? q.axis : 1;
  return q;
}

/// The constants standing for one int8 weight: values, scales and zero points.
struct weight_constants {
  ir::value* values = nullptr;
  ir::value* scale = nullptr;
  ir::value* zero_point = nullptr;
};

weight_constants add_weight(ir::graph& g, const int8_weight& q) {
  const std::vector<std::int64_t> scale_dims = q.scale_dims();
  const std::string& base = q.weight->name();
  return {add_constant<std::int8_t>(g, base + "_quantized", q.dims, q.values),
          add_constant<float>(g, base + "_scale", scale_dims, q.scales),
          add_constant<std::int8_t>(g, base + "_zero_point", scale_dims, std::vector<std::int8_t>(q.scales.size(), 0))};
}

/// The outputs of one DynamicQuantizeLinear.
struct quantized_activation {
  ir::value* values = nullptr;
  ir::value* scale = nullptr;
  ir::value* zero_point = nullptr;
};

quantized_activation add_dynamic_quantize(ir::graph& g, ir::value* x, ir::node* position) {
  const std::string& base = x->name();
  ir::node* q = g.add_node(ir::node_spec{"DynamicQuantizeLinear", {x},
                                         {g.unique_name(base + "_quantized"), g.unique_name(base + "_scale"),
                                          g.unique_name(base + "_zero_point")},
                                         {}, base + "_DynamicQuantizeLinear", {}},
                           position);
  if (x->type() && x->type()->is_tensor) q->output(0)->set_type(ir::value_type{true, ir::data_type::uint8, x->type()->dims});
  q->output(1)->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{}});
  q->output(2)->set_type(ir::value_type{true, ir::data_type::uint8, ir::shape{}});
  return {q->output(0), q->output(1), q->output(2)};
}

/// Adds `op(inputs)` before `position`; its one output is typed like `like` with `type`.
ir::value* add_step(ir::graph& g, const std::string& op, std::vector<ir::value*> inputs, const std::string& base,
                    ir::node* position, const ir::value* like, ir::data_type type, std::vector<ir::attribute> attrs = {}) {
  ir::node* n = g.add_node(ir::node_spec{op, std::move(inputs), {g.unique_name(base + "_" + op)}, std::move(attrs), base + "_" + op, {}},
                           position);
  if (like && like->type() && like->type()->is_tensor) n->output(0)->set_type(ir::value_type{true, type, like->type()->dims});
  return n->output(0);
}

/// Replaces the plan's node by the integer product and its rescale; the result keeps the
/// node's output name.
void rewrite_linear(ir::graph& g, const linear_plan& p, const quantized_activation& x, const weight_constants& w) {
  ir::node* n = p.node;
  ir::value* out = n->output(0);
  const std::string base = n->name().empty() ? out->name() : n->name();
  using enum ir::data_type;
  ir::value* acc = add_step(g, "MatMulInteger", {x.values, w.values, x.zero_point, w.zero_point}, base, n, out, int32);
  std::vector<ir::attribute> to_float;
  to_float.push_back(ir::attribute::make_int("to", static_cast<std::int64_t>(float32)));
  ir::value* real = add_step(g, "Cast", {acc}, base, n, out, float32, std::move(to_float));
  ir::value* scale = add_step(g, "Mul", {x.scale, w.scale}, base + "_scale", n, nullptr, float32);
  ir::value* y = add_step(g, "Mul", {real, scale}, base, n, out, float32);
  if (p.bias) y = add_step(g, "Add", {y, p.bias}, base, n, out, float32);
  const std::string name = out->name();
  g.replace_all_uses(out, y);
  g.erase(n);
  g.rename(y, name);
}

/// The model to edit: `m` itself, or a copy converted to opset 13 when `m` is below 11.
ir::model* editable(ir::model& m, ir::model& raised, dynamic_report& report) {
  report.opset = m.opset("").value_or(0);
  if (report.opset >= 11) return &m;
  raised = m.clone();
  try {
    (void)ir::convert_opset(raised, 13);
  } catch (const error& e) {
    throw error(errc::unsupported, "quantize-dynamic: DynamicQuantizeLinear needs opset 11, and converting the model's opset " +
                                       std::to_string(report.opset) + " to 13 failed: " + e.what());
  }
  return &raised;
}

}  // namespace

dynamic_report quantize_dynamic(ir::model& m, const dynamic_options& options) {
  dynamic_report report;
  const int largest_code = largest_weight_code(options.weight_bits);
  report.weight_bits = options.weight_bits;
  ir::model raised;
  ir::model* target = editable(m, raised, report);
  ir::graph& g = target->graph();
  const std::int64_t ir_version = target->ir_version;

  std::vector<linear_plan> plans;
  for (ir::node* n : g.node_list()) {
    if (!n->is("MatMul") && !n->is("Gemm")) continue;
    if (detail::excluded(*n, options.exclude_nodes, options.exclude_op_types)) {
      report.skipped.push_back(n->describe() + ": excluded");
      continue;
    }
    linear_plan p;
    if (std::string why = plan_linear(*n, ir_version, p); !why.empty()) {
      report.skipped.push_back(n->describe() + ": " + why);
      continue;
    }
    plans.push_back(p);
  }
  if (plans.empty()) return report;

  // Every weight is quantized before anything is edited, so a NaN weight leaves `m` as it was.
  const bool per_channel = options.weights == weight_granularity::per_channel;
  std::map<std::pair<const ir::value*, bool>, int8_weight> weights;
  for (const linear_plan& p : plans) {
    ir::value* w = p.node->input(1);
    if (weights.contains({w, p.transposed})) continue;
    weights.emplace(std::pair{w, p.transposed}, quantized_kn(w, ir_version, p.transposed, per_channel, largest_code));
  }

  if (target == &raised) {
    m = std::move(raised);
    report.opset = 13;
    report.opset_raised = true;
  }
  std::map<const ir::value*, quantized_activation> activations;
  std::map<std::pair<const ir::value*, bool>, weight_constants> constants;
  std::vector<ir::value*> replaced;
  for (const linear_plan& p : plans) {
    ir::value* x = p.node->input(0);
    auto a = activations.find(x);
    if (a == activations.end()) {  // plans are in graph order: this is x's first quantized reader
      a = activations.emplace(x, add_dynamic_quantize(g, x, p.node)).first;
      ++report.activations_quantized;
    }
    ir::value* w = p.node->input(1);
    auto c = constants.find({w, p.transposed});
    if (c == constants.end()) {
      c = constants.emplace(std::pair{w, p.transposed}, add_weight(g, weights.at({w, p.transposed}))).first;
      ++report.weights_quantized;
    }
    replaced.push_back(w);
    rewrite_linear(g, p, a->second, c->second);
  }
  detail::erase_unread_initializers(g, replaced);
  report.nodes_quantized = static_cast<std::int64_t>(plans.size());
  return report;
}

}  // namespace inferopt::quant
