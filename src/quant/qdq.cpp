#include "inferopt/quant/qdq.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/convert_opset.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "int8_weights.hpp"

namespace inferopt::quant {

namespace {

using detail::add_constant;
using detail::int8_weight;
constexpr std::int64_t per_tensor = detail::per_tensor_axis;

// ---- planning: which nodes, which tensors (no edits) ------------------------------------

/// What will happen to one node; every check was made when this exists.
struct node_plan {
  ir::node* node = nullptr;
  std::vector<std::size_t> activation_inputs;  // input slots fed through Q/DQ
  std::optional<std::size_t> weight_input;
  std::int64_t weight_axis = per_tensor;
  std::optional<std::size_t> bias_input;
  std::int64_t channels = 0;                   // output channels, for the bias
  ir::value* output = nullptr;                 // Add/Concat/pool output quantized for all readers
  bool shares_scale = false;                   // inputs and output get one scale (Concat, pools)
};

struct planner {
  const ir::model& model;
  const range_table& ranges;
  const qdq_options& options;
  std::int64_t ir_version;  // which initializers are constants (ir::is_constant)
  bool per_channel;
  int largest_code;  // of the weights: largest_weight_code(options.weight_bits)

  [[nodiscard]] bool excluded(const ir::node& n) const {
    return detail::excluded(n, options.exclude_nodes, options.exclude_op_types);
  }

  /// Why activation `v` cannot be quantized, or empty.
  [[nodiscard]] std::string activation_problem(const ir::value* v, bool untyped_ok) const {
    if (!v) return "an omitted input";
    if (ir::is_constant(*v, ir_version)) return "constant operand '" + v->name() + "'";
    const ir::data_type t = v->elem_type();
    if (t != ir::data_type::float32 && !(untyped_ok && t == ir::data_type::undefined)) {
      return "'" + v->name() + "' is " + std::string(ir::to_string(t)) + ", not float";
    }
    if (ranges.find(v->name()) == ranges.end()) return "no range for '" + v->name() + "'";
    if (v->producer() && v->producer()->is("DequantizeLinear")) return "already quantized";
    return {};
  }

  /// The output a quantized Add hands on: the Relu/Clip reading it alone when there is one,
  /// since that is where an int8 kernel with a fused activation requantizes.
  [[nodiscard]] static ir::value* requantized_output(ir::value* out) {
    ir::node* next = ir::sole_user(out);
    if (next && (next->is("Relu") || next->is("Clip")) && next->input(0) == out && next->output(0)) {
      return next->output(0);
    }
    return out;
  }

  [[nodiscard]] std::string plan_weighted(ir::node& n, node_plan& p) const;
  [[nodiscard]] std::string plan_elementwise(ir::node& n, node_plan& p) const;
  [[nodiscard]] std::string plan(ir::node& n, node_plan& p) const;
};

bool is_weighted(const ir::node& n) {
  return n.is("Conv") || n.is("ConvTranspose") || n.is("Gemm") || n.is("MatMul") ||
         (n.domain() == "com.microsoft" && n.op_type() == "FusedConv");
}

std::string planner::plan_weighted(ir::node& n, node_plan& p) const {
  if (std::string why = activation_problem(n.input(0), true); !why.empty()) return why;
  p.activation_inputs.push_back(0);
  ir::value* w = n.input(1);
  if (!w) return "no weight input";
  const ir::tensor* wt = ir::constant_tensor(w, ir_version);
  if (n.is("MatMul") && !wt) {  // two activations: both go through Q/DQ, no weight
    if (std::string why = activation_problem(w, true); !why.empty()) return why;
    p.activation_inputs.push_back(1);
    return {};
  }
  if (!wt || wt->dtype != ir::data_type::float32) return "weight '" + w->name() + "' is not a constant float32 tensor";
  const std::vector<std::int64_t>& d = wt->dims;
  const std::size_t rank = d.size();
  const bool conv_like = n.op_type() == "Conv" || n.op_type() == "FusedConv" || n.op_type() == "ConvTranspose";
  if ((conv_like && rank < 3) || (n.is("Gemm") && rank != 2) || (n.is("MatMul") && rank < 2)) {
    return "weight '" + w->name() + "' has an unexpected rank";
  }
  p.weight_input = 1;
  std::int64_t axis = 0;
  if (n.is("ConvTranspose")) {
    axis = 1;  // W is [C_in, C_out / group, k...]
    const std::int64_t group = n.attr_int("group", 1);
    p.channels = d[1] * group;
    if (group != 1) axis = per_tensor;  // axis 1 would hold C_out / group scales, not C_out
  } else if (n.is("Gemm")) {
    axis = n.attr_int("transB", 0) != 0 ? 0 : 1;
    p.channels = d[static_cast<std::size_t>(axis)];
  } else if (n.is("MatMul")) {
    axis = static_cast<std::int64_t>(rank) - 1;
    p.channels = d.back();
  } else {
    p.channels = d[0];
  }
  p.weight_axis = per_channel ? axis : per_tensor;

  const std::size_t bias_slot = 2;
  if (options.quantize_bias && !n.is("MatMul") && n.input(bias_slot)) {
    const ir::tensor* bt = ir::constant_tensor(n.input(bias_slot), ir_version);
    const bool gemm_scaled = n.is("Gemm") && (n.attr_float("alpha", 1.0f) != 1.0f || n.attr_float("beta", 1.0f) != 1.0f);
    if (bt && bt->dtype == ir::data_type::float32 && bt->dims.size() == 1 && bt->dims[0] == p.channels && !gemm_scaled) {
      p.bias_input = bias_slot;
    }
  }
  return {};
}

std::string planner::plan_elementwise(ir::node& n, node_plan& p) const {
  if (n.outputs().size() != 1 || !n.output(0)) {
    return n.is("MaxPool") ? "MaxPool produces Indices" : "not exactly one output";
  }
  if (n.inputs().empty() || (n.is("Add") && n.inputs().size() != 2)) return "unexpected input count";
  for (std::size_t i = 0; i < n.inputs().size(); ++i) {
    if (std::string why = activation_problem(n.input(i), false); !why.empty()) return why;
    p.activation_inputs.push_back(i);
  }
  const bool shares = n.is("Concat") || n.is("MaxPool") || options.average_pool_shares_scale;
  if (!shares) {  // Add and, by default, average pools: the output has its own range
    p.output = n.is("Add") ? requantized_output(n.output(0)) : n.output(0);
    // The output's type is the inputs' (checked float32 above) even where it was not inferred.
    if (std::string why = activation_problem(p.output, true); !why.empty()) return why;
    return {};
  }
  // Concat, MaxPool (and average pools when asked): the output shares the inputs' scale, so
  // its own range is optional.
  p.output = n.output(0);
  p.shares_scale = true;
  const ir::data_type t = p.output->elem_type();
  if (t != ir::data_type::float32 && t != ir::data_type::undefined) return "output '" + p.output->name() + "' is not float";
  return {};
}

std::string planner::plan(ir::node& n, node_plan& p) const {
  p.node = &n;
  if (is_weighted(n)) return plan_weighted(n, p);
  return plan_elementwise(n, p);
}


// ---- computing every quantized value (still no edits) -----------------------------------

/// One activation tensor fed through a Q/DQ pair.
struct activation_entry {
  ir::value* value = nullptr;
  tensor_range range;
  std::vector<ir::use> uses;  // readers moved to the DQ output
  bool all_readers = false;   // every reader in this graph except excluded nodes
  bool has_range = false;     // false only for a group member the table lacks
  quant_params params;
};

/// Activation entries in planning order, with the scale groups resolved.
class activation_table {
 public:
  activation_entry& at(ir::value* v, const range_table& ranges) {
    auto [it, added] = index_.try_emplace(v, entries_.size());
    if (added) {
      activation_entry e;
      e.value = v;
      if (auto r = ranges.find(v->name()); r != ranges.end()) {
        e.range = r->second;
        e.has_range = true;
      }
      entries_.push_back(std::move(e));
    }
    return entries_[it->second];
  }
  [[nodiscard]] const activation_entry* find(const ir::value* v) const {
    auto it = index_.find(v);
    return it == index_.end() ? nullptr : &entries_[it->second];
  }
  void add_group(std::vector<ir::value*> members) { groups_.push_back(std::move(members)); }

  /// Gives every member of a group the union of the group's ranges; groups that share a
  /// member (a Concat feeding a MaxPool) are merged by repeating until nothing widens.
  void resolve_groups() {
    for (bool widened = true; widened;) {
      widened = false;
      for (const std::vector<ir::value*>& group : groups_) {
        std::optional<tensor_range> u;
        for (ir::value* v : group) {
          const activation_entry& e = entries_[index_.at(v)];
          if (!e.has_range) continue;
          u = u ? tensor_range{std::min(u->min, e.range.min), std::max(u->max, e.range.max)} : e.range;
        }
        for (ir::value* v : group) {
          activation_entry& e = entries_[index_.at(v)];
          if (!e.has_range || e.range.min != u->min || e.range.max != u->max) {
            e.range = *u;
            e.has_range = true;
            widened = true;
          }
        }
      }
    }
  }

  std::vector<activation_entry>& entries() { return entries_; }

 private:
  std::vector<activation_entry> entries_;
  std::map<const ir::value*, std::size_t> index_;
  std::vector<std::vector<ir::value*>> groups_;
};


/// An int32 bias with scale s_x * s_w (per channel when the weight is).
struct bias_entry {
  ir::node* node = nullptr;
  std::size_t input = 0;
  std::vector<std::int32_t> values;
  std::vector<float> scales;
};

/// The int32 bias, or nullopt (with `why` set) when a scale underflows or a value overflows.
std::optional<bias_entry> quantize_bias(const std::vector<double>& bias, float input_scale,
                                        const std::vector<float>& weight_scales, std::string& why) {
  bias_entry e;
  for (float ws : weight_scales) {
    const float s = static_cast<float>(static_cast<double>(input_scale) * static_cast<double>(ws));
    if (!std::isnormal(s)) {
      why = "bias scale underflows";
      return std::nullopt;
    }
    e.scales.push_back(s);
  }
  constexpr double limit = std::numeric_limits<std::int32_t>::max();
  for (std::size_t c = 0; c < bias.size(); ++c) {
    const double q = std::nearbyint(bias[c] / static_cast<double>(e.scales[e.scales.size() == 1 ? 0 : c]));
    if (!(std::abs(q) <= limit)) {
      why = "bias value " + std::to_string(bias[c]) + " overflows int32";
      return std::nullopt;
    }
    e.values.push_back(static_cast<std::int32_t>(q));
  }
  return e;
}

// ---- editing ---------------------------------------------------------------------------------

ir::value* add_zero_point(ir::graph& g, const std::string& base, const quant_params& p) {
  if (p.dtype == ir::data_type::uint8) {
    return add_constant<std::uint8_t>(g, base, {}, {static_cast<std::uint8_t>(p.zero_point)});
  }
  return add_constant<std::int8_t>(g, base, {}, {static_cast<std::int8_t>(p.zero_point)});
}

/// `like`'s type with another element type, when `like` has one.
std::optional<ir::value_type> retyped(const ir::value* like, ir::data_type type) {
  if (!like->type() || !like->type()->is_tensor) return std::nullopt;
  return ir::value_type{true, type, like->type()->dims};
}

/// Adds `op(inputs)` before `position` with one fresh output of type `type`.
ir::value* add_single(ir::graph& g, const std::string& op, std::vector<ir::value*> inputs, const std::string& base,
                      ir::node* position, std::optional<ir::value_type> type,
                      std::vector<ir::attribute> attributes = {}) {
  std::string output = g.unique_name(base + "_" + (op == "QuantizeLinear" ? "quantized" : "dequantized"));
  ir::node* n = g.add_node(
      ir::node_spec{op, std::move(inputs), {std::move(output)}, std::move(attributes), base + "_" + op, {}},
      position);
  n->output(0)->set_type(std::move(type));
  return n->output(0);
}

/// The live nodes of `g` by position, to insert a pair before the first reader.
std::map<const ir::node*, std::size_t> positions(const ir::graph& g) {
  std::map<const ir::node*, std::size_t> out;
  std::size_t i = 0;
  for (const ir::node* n : g.nodes()) out[n] = i++;
  return out;
}

// ---- the three steps ------------------------------------------------------------------------

/// 1. Decides, node by node, with nothing edited. `excluded` collects the nodes the options
/// leave in float, whose inputs later stay float as well.
std::vector<node_plan> plan_nodes(ir::graph& g, const planner& pl, std::set<const ir::node*>& excluded,
                                  qdq_report& report) {
  std::vector<node_plan> plans;
  for (ir::node* n : g.node_list()) {
    const bool is_excluded = pl.excluded(*n);
    if (is_excluded) excluded.insert(n);
    const bool candidate = is_weighted(*n) || n->is("Add") || n->is("Concat") || n->is("MaxPool") ||
                           n->is("AveragePool") || n->is("GlobalAveragePool");
    const std::vector<std::string>& only = pl.options.op_types;
    if (!candidate || (!only.empty() && std::find(only.begin(), only.end(), n->op_type()) == only.end())) continue;
    if (is_excluded) {
      report.skipped.push_back(n->describe() + ": excluded");
      continue;
    }
    node_plan p;
    if (std::string why = pl.plan(*n, p); !why.empty()) {
      report.skipped.push_back(n->describe() + ": " + why);
      continue;
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

/// 2a. Every activation fed through Q/DQ, with its scale and zero point (nothing edited).
activation_table activations_of(const std::vector<node_plan>& plans, const range_table& ranges,
                                const qdq_options& options) {
  activation_table acts;
  for (const node_plan& p : plans) {
    std::vector<ir::value*> group;
    for (std::size_t i : p.activation_inputs) {
      activation_entry& e = acts.at(p.node->input(i), ranges);
      e.uses.push_back(ir::use{p.node, i});
      group.push_back(e.value);
    }
    if (p.output) {
      acts.at(p.output, ranges).all_readers = true;
      group.push_back(p.output);
    }
    if (p.shares_scale) acts.add_group(std::move(group));
  }
  acts.resolve_groups();
  for (activation_entry& e : acts.entries()) {
    try {
      e.params = activation_params(e.range, options.activations);
    } catch (const error& err) {
      throw error(errc::invalid_argument, "quantize-qdq: tensor '" + e.value->name() + "': " + err.what());
    }
  }
  return acts;
}

constexpr std::size_t none = static_cast<std::size_t>(-1);

/// The quantized constants of the plans: each weight once per axis, biases per plan.
struct constant_plan {
  std::vector<int8_weight> weights;
  std::vector<std::size_t> weight_of;             // per plan: index into `weights`, or none
  std::vector<std::optional<bias_entry>> biases;  // per plan
  std::vector<ir::value*> dequantized;            // per weight: its DequantizeLinear, once added
};

/// 2b. The int8 weights and int32 biases (nothing edited); a bias that cannot be quantized
/// stays float and is listed in the report.
constant_plan constants_of(const std::vector<node_plan>& plans, const activation_table& acts, const planner& pl,
                           qdq_report& report) {
  std::vector<int8_weight> weights;
  std::map<std::pair<const ir::value*, std::int64_t>, std::size_t> weight_index;
  std::vector<std::size_t> weight_of(plans.size(), none);
  std::vector<std::optional<bias_entry>> biases(plans.size());
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const node_plan& p = plans[k];
    if (!p.weight_input) continue;
    ir::value* w = p.node->input(*p.weight_input);
    auto [it, added] = weight_index.try_emplace({w, p.weight_axis}, weights.size());
    if (added) weights.push_back(detail::quantize_int8_weight(w, *ir::constant_floats(w, pl.ir_version), p.weight_axis, pl.largest_code));
    weight_of[k] = it->second;
    if (!p.bias_input) continue;
    std::string why;
    const float input_scale = acts.find(p.node->input(0))->params.scale;
    biases[k] = quantize_bias(*ir::constant_floats(p.node->input(*p.bias_input), pl.ir_version), input_scale,
                              weights[it->second].scales, why);
    if (biases[k]) {
      biases[k]->node = p.node;
      biases[k]->input = *p.bias_input;
    } else {
      report.skipped.push_back(p.node->describe() + ": bias left in float: " + why);
    }
  }
  std::vector<ir::value*> dequantized(weights.size(), nullptr);
  return {std::move(weights), std::move(weight_of), std::move(biases), std::move(dequantized)};
}

/// 3a. One QuantizeLinear per activation, before its first reader, and one DequantizeLinear
/// per reading node, right before it. onnxruntime fuses a DQ -> op (-> Q) group only when the
/// DQ feeds that op alone: a DQ shared by attention's Q, K and V projections left all three
/// as float products on dequantized weights, slower than float.
void insert_activation_pairs(ir::graph& g, activation_table& acts, const std::set<const ir::node*>& excluded,
                             qdq_report& report) {
  const std::map<const ir::node*, std::size_t> order = positions(g);
  for (activation_entry& e : acts.entries()) {
    std::vector<ir::use> moved = e.uses;
    if (e.all_readers) {
      for (const ir::use& u : e.value->uses()) {
        if (u.user->owner() == &g && !excluded.contains(u.user) && std::find(moved.begin(), moved.end(), u) == moved.end()) {
          moved.push_back(u);
        }
      }
    }
    if (moved.empty()) continue;  // only a graph output reads it: that output stays float
    std::sort(moved.begin(), moved.end(), [&](const ir::use& a, const ir::use& b) {
      return order.at(a.user) < order.at(b.user) || (a.user == b.user && a.input_index < b.input_index);
    });
    const std::string& base = e.value->name();
    ir::value* scale = add_constant<float>(g, base + "_scale", {}, {e.params.scale});
    ir::value* zero = add_zero_point(g, base + "_zero_point", e.params);
    ir::value* q = add_single(g, "QuantizeLinear", {e.value, scale, zero}, base, moved.front().user,
                              retyped(e.value, e.params.dtype));
    ir::value* dq = nullptr;
    const ir::node* dq_reader = nullptr;
    for (const ir::use& u : moved) {
      if (u.user != dq_reader) {  // a node reading x twice (x * x) reads one DQ
        dq = add_single(g, "DequantizeLinear", {q, scale, zero}, base, u.user, retyped(e.value, ir::data_type::float32));
        dq_reader = u.user;
      }
      g.set_input(u.user, u.input_index, dq);
    }
    ++report.activations_quantized;
  }
}

/// The DequantizeLinear of an int8 weight, added before `front`.
ir::value* dequantized_weight(ir::graph& g, const int8_weight& we, ir::node* front) {
  const std::string& base = we.weight->name();
  const std::vector<std::int64_t> scale_dims = we.scale_dims();
  ir::value* q = add_constant<std::int8_t>(g, base + "_quantized", we.dims, we.values);
  ir::value* scale = add_constant<float>(g, base + "_scale", scale_dims, we.scales);
  ir::value* zero = add_constant<std::int8_t>(g, base + "_zero_point", scale_dims, std::vector<std::int8_t>(we.scales.size(), 0));
  std::vector<ir::attribute> attrs;
  if (we.axis != per_tensor) attrs.push_back(ir::attribute::make_int("axis", we.axis));
  return add_single(g, "DequantizeLinear", {q, scale, zero}, base, front,
                    ir::value_type{true, ir::data_type::float32, ir::shape(we.dims.begin(), we.dims.end())},
                    std::move(attrs));
}

/// The DequantizeLinear of an int32 bias replacing `old_bias`, added before `front`.
ir::value* dequantized_bias(ir::graph& g, const bias_entry& b, const ir::value* old_bias, ir::node* front) {
  const std::string& base = old_bias->name();
  const auto count = static_cast<std::int64_t>(b.values.size());
  const bool per_axis = b.scales.size() > 1;
  ir::value* q = add_constant<std::int32_t>(g, base + "_quantized", {count}, b.values);
  ir::value* scale = add_constant<float>(g, base + "_scale", per_axis ? std::vector<std::int64_t>{count} : std::vector<std::int64_t>{}, b.scales);
  std::vector<ir::attribute> attrs;
  if (per_axis) attrs.push_back(ir::attribute::make_int("axis", 0));
  // No zero point: int32 DequantizeLinear defaults it to 0, the only value int8 kernels accept.
  return add_single(g, "DequantizeLinear", {q, scale}, base, front,
                    ir::value_type{true, ir::data_type::float32, ir::shape{count}}, std::move(attrs));
}

/// 3b. Weights and biases behind their DequantizeLinear; returns the float constants replaced.
std::vector<ir::value*> insert_constants(ir::graph& g, const std::vector<node_plan>& plans, constant_plan& c,
                                         qdq_report& report) {
  std::vector<ir::value*> replaced;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    if (c.weight_of[k] == none) continue;
    ir::node* n = plans[k].node;
    const std::size_t w = c.weight_of[k];
    ir::node* front = *g.nodes().begin();  // the DQ reads initializers only: any place will do
    if (!c.dequantized[w]) {
      c.dequantized[w] = dequantized_weight(g, c.weights[w], front);
      ++report.weights_quantized;
    }
    replaced.push_back(n->input(*plans[k].weight_input));
    g.set_input(n, *plans[k].weight_input, c.dequantized[w]);

    if (!c.biases[k]) continue;
    const bias_entry& b = *c.biases[k];
    ir::value* old_bias = n->input(b.input);
    ir::value* dq = dequantized_bias(g, b, old_bias, front);
    replaced.push_back(old_bias);
    g.set_input(n, b.input, dq);
    ++report.biases_quantized;
  }
  return replaced;
}

}  // namespace

std::vector<std::string> transformer_op_types() { return {"MatMul", "Gemm"}; }

bool has_attention(const ir::model& m) {
  const ir::graph& g = m.graph();
  const auto product_of_activations = [&](const ir::value* v) {
    for (int hops = 0; v && v->producer() && hops < 4; ++hops) {  // through Div, Add (mask), Mul
      const ir::node* p = v->producer();
      if (p->is("MatMul")) {
        return p->input(0) && p->input(1) && !ir::is_constant(*p->input(0), m.ir_version) &&
               !ir::is_constant(*p->input(1), m.ir_version);
      }
      v = p->input(0);
    }
    return false;
  };
  for (const ir::node* n : g.nodes()) {
    const std::string& op = n->op_type();
    if (op == "Attention" || op == "MultiHeadAttention") return true;
    if (n->is("Softmax") && product_of_activations(n->input(0))) return true;
  }
  return false;
}

qdq_report quantize_qdq(ir::model& m, const range_table& ranges, const qdq_options& options) {
  qdq_report report;
  const int largest_code = largest_weight_code(options.weight_bits);  // refuses bad bits before any edit
  report.weight_bits = options.weight_bits;
  const std::int64_t opset = m.opset("").value_or(0);
  if (opset < 10) {
    throw error(errc::unsupported, "quantize-qdq: QuantizeLinear needs opset 10 or later, the model imports opset " +
                                       std::to_string(opset) + " (ir::convert_opset raises it)");
  }
  report.opset = opset;
  bool per_channel = options.weights == weight_granularity::per_channel;
  // Per-axis scales need opset 13: a copy converted to 13 is planned and edited, and takes
  // m's place once there is something to quantize. A model the converter cannot take there
  // gets per-tensor weights instead.
  ir::model raised;
  ir::model* target = &m;
  if (per_channel && opset < 13) {
    raised = m.clone();
    try {
      (void)ir::convert_opset(raised, 13);
      target = &raised;
    } catch (const error&) {
      per_channel = false;
      report.per_tensor_fallback = true;
    }
  }

  // 1. Decide, node by node, with nothing edited.
  ir::graph& g = target->graph();
  const planner pl{*target, ranges, options, target->ir_version, per_channel, largest_code};
  std::set<const ir::node*> excluded;
  const std::vector<node_plan> plans = plan_nodes(g, pl, excluded, report);
  if (plans.empty()) return report;

  // 2. Compute every scale, zero point and quantized constant, still with nothing edited.
  activation_table acts = activations_of(plans, ranges, options);
  constant_plan constants = constants_of(plans, acts, pl, report);

  // 3. Edit. The graph object moves with the model, so `g` and the plans stay valid.
  if (target == &raised) {
    m = std::move(raised);
    report.opset = 13;
    report.opset_raised = true;
  }
  insert_activation_pairs(g, acts, excluded, report);
  detail::erase_unread_initializers(g, insert_constants(g, plans, constants, report));
  report.nodes_quantized = static_cast<std::int64_t>(plans.size());
  return report;
}

}  // namespace inferopt::quant
