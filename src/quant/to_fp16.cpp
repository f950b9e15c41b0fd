#include "inferopt/quant/to_fp16.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "norm_statistics.hpp"

namespace inferopt {
namespace {

using ir::data_type;

/// The largest finite float16; float32 constants beyond it would become infinities.
constexpr double max_half = 65504.0;

/// Slots typed 'T' in an op's schema, as bit masks over input and output indices.
struct slot_rule {
  static constexpr std::uint32_t all = 0xffffffffu;  // every slot, however many (variadic ops)
  std::uint32_t inputs = 0;
  std::uint32_t outputs = 0;
  bool reads_any = false;  // Shape/Size read any element type, so no Cast is needed before them

  [[nodiscard]] static bool has(std::uint32_t mask, std::size_t i) noexcept {
    return mask == all || (i < 32 && ((mask >> i) & 1u) != 0);
  }
  [[nodiscard]] bool input(std::size_t i) const noexcept { return has(inputs, i); }
  [[nodiscard]] bool output(std::size_t i) const noexcept { return has(outputs, i); }
};

constexpr std::uint32_t slot(std::size_t i) { return 1u << i; }

/// The 'T' slots of the ops the pass converts, or nullopt for an op it does not know. Every
/// listed op accepts float16 for 'T' in the ONNX schema from the opsets in common use (7+).
std::optional<slot_rule> float_slots(const ir::node& n) {
  static const std::unordered_map<std::string_view, slot_rule> rules = [] {
    std::unordered_map<std::string_view, slot_rule> r;
    constexpr std::uint32_t all = slot_rule::all;
    // Every input and output is 'T'.
    for (std::string_view op :
         {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus",
          "Softsign", "Mish", "Gelu", "Abs", "Neg", "Sign", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil",
          "Round", "Erf", "Sin", "Cos", "Identity", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "PRelu",
          "Conv", "ConvTranspose", "Gemm", "MatMul", "InstanceNormalization", "LRN", "Softmax", "LogSoftmax",
          "GlobalAveragePool", "GlobalMaxPool", "AveragePool", "LpPool", "Concat", "Clip"}) {
      r[op] = {all, all};
    }
    // Data input 0 and output 0 are 'T'; the other inputs are shapes, axes, indices, pads or
    // float32-only operands (Resize's roi and scales), and MaxPool's output 1 is int64.
    for (std::string_view op :
         {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Gather", "GatherElements", "Expand",
          "Tile", "DepthToSpace", "SpaceToDepth", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
          "ReduceL2", "MaxPool", "Dropout", "Resize", "Upsample", "TopK"}) {
      r[op] = {slot(0), slot(0)};
    }
    r["BatchNormalization"] = {all, slot(0)};  // training-mode statistics outputs stay as they are
    r["Split"] = {slot(0), all};                // input 1 (opset 13+) holds int64 sizes
    r["Pad"] = {slot(0) | slot(2), slot(0)};   // data and constant_value; pads and axes are int64
    r["Where"] = {slot(1) | slot(2), all};     // the condition is bool
    for (std::string_view op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) r[op] = {all, 0};
    r["Shape"] = {0, 0, true};
    r["Size"] = {0, 0, true};
    r["Constant"] = {0, all};         // the `value` tensor attribute is converted
    r["ConstantOfShape"] = {0, all};  // likewise; the shape input is int64
    return r;
  }();
  if (!n.is_onnx_domain()) return std::nullopt;
  auto it = rules.find(n.op_type());
  if (it == rules.end()) return std::nullopt;
  return it->second;
}

/// The float32 tensor a Constant/ConstantOfShape produces, or null when its value is given
/// some other way (value_float, sparse_value, ...) or has another element type. A
/// ConstantOfShape without `value` produces float32 zeros: `absent` is set then.
const ir::tensor* constant_value(const ir::node& n, bool* absent) {
  *absent = false;
  const ir::attribute* a = n.find_attribute("value");
  if (a == nullptr) {
    *absent = n.is("ConstantOfShape") && n.attributes().empty();
    return nullptr;
  }
  if (a->kind != ir::attribute_kind::t || a->tensors.empty()) return nullptr;
  const ir::tensor& t = a->tensors.front();
  return t.dtype == data_type::float32 && t.has_data() ? &t : nullptr;
}

/// `values` as a float16 tensor; finite values beyond the half range are clamped to it and
/// counted in `clamped`.
ir::tensor to_half(std::vector<std::int64_t> dims, std::vector<double> values, std::int64_t& clamped) {
  for (double& x : values) {
    if (std::isfinite(x) && std::abs(x) > max_half) {
      x = std::copysign(max_half, x);
      ++clamped;
    }
  }
  ir::tensor like;
  like.dtype = data_type::float16;
  return ir::floats_as(like, std::move(dims), values);
}

/// What phase one decided; phase two only edits what is recorded here.
struct conversion_plan {
  std::unordered_set<const ir::node*> converted;
  std::unordered_set<const ir::value*> half;  // values that hold float16 after the pass
  std::unordered_map<const ir::value*, data_type> inferred;  // element types of untyped outputs
  std::int64_t blocked = 0;  // float32 nodes kept by the block lists
  std::int64_t statistics_kept = 0;  // float32 nodes kept for a normalization's squares
};

data_type elem_of(const ir::value* v, const conversion_plan& plan) {
  if (v == nullptr) return data_type::undefined;
  if (v->elem_type() != data_type::undefined) return v->elem_type();
  auto it = plan.inferred.find(v);
  return it == plan.inferred.end() ? data_type::undefined : it->second;
}

/// Records the element type of `n`'s untyped 'T' outputs: that of its 'T' inputs.
void infer_outputs(const ir::node& n, const slot_rule& rule, conversion_plan& plan) {
  data_type t = data_type::undefined;
  bool absent = false;
  if (n.is("Constant") || n.is("ConstantOfShape")) {
    const ir::tensor* value = constant_value(n, &absent);
    if (value != nullptr || absent) t = data_type::float32;
  }
  for (std::size_t i = 0; i < n.inputs().size() && t == data_type::undefined; ++i) {
    if (rule.input(i)) t = elem_of(n.input(i), plan);
  }
  if (t == data_type::undefined) return;
  for (std::size_t i = 0; i < n.outputs().size(); ++i) {
    const ir::value* out = n.output(i);
    if (out && rule.output(i) && out->elem_type() == data_type::undefined) plan.inferred[out] = t;
  }
}

}  // namespace

const std::set<std::string, std::less<>>& to_fp16::default_blocked_ops() {
  // Resize/Upsample/TopK/Range/NonMaxSuppression/RoiAlign lack float16 kernels or break on
  // them in common runtimes; random generators and CumSum lose too much in 11 bits; the
  // recurrent ops and Einsum have no float16 CPU kernels in ONNX Runtime.
  static const std::set<std::string, std::less<>> ops{
      "Resize",        "Upsample", "TopK", "Range", "NonMaxSuppression", "RoiAlign", "RandomNormal",
      "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "RNN", "LSTM",
      "GRU",           "CumSum",   "Einsum"};
  return ops;
}

to_fp16::to_fp16() : blocked_ops_(default_blocked_ops()) {}

namespace {

std::set<std::string, std::less<>> split_names(std::string_view text) {
  std::set<std::string, std::less<>> out;
  while (!text.empty()) {
    const std::size_t end = text.find(';');
    std::string_view item = text.substr(0, end);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::string join_names(const std::set<std::string, std::less<>>& names) {
  std::string out;
  for (const std::string& s : names) out += (out.empty() ? "" : ";") + s;
  return out;
}

}  // namespace

void to_fp16::set_option(std::string_view key, std::string_view value) {
  if (key == "keep-io-types") {
    if (value == "1" || value == "true") {
      keep_io_types_ = true;
    } else if (value == "0" || value == "false") {
      keep_io_types_ = false;
    } else {
      throw error(errc::invalid_argument, "to-fp16: keep-io-types must be 0, 1, true or false, got '" +
                                              std::string(value) + "'");
    }
  } else if (key == "block-ops") {
    extra_blocked_ = split_names(value);
    blocked_ops_ = default_blocked_ops();
    blocked_ops_.insert(extra_blocked_.begin(), extra_blocked_.end());
  } else if (key == "block-nodes") {
    blocked_nodes_ = split_names(value);
  } else if (key == "keep-norm-statistics") {
    if (value != "0" && value != "1" && value != "true" && value != "false") {
      throw error(errc::invalid_argument, "to-fp16: keep-norm-statistics must be 0, 1, true or false, got '" +
                                              std::string(value) + "'");
    }
    keep_norm_statistics_ = value == "1" || value == "true";
  } else {
    pass::set_option(key, value);
  }
}

std::map<std::string, std::string> to_fp16::options() const {
  std::map<std::string, std::string> out;
  if (!keep_io_types_) out["keep-io-types"] = "0";
  if (!extra_blocked_.empty()) out["block-ops"] = join_names(extra_blocked_);
  if (!blocked_nodes_.empty()) out["block-nodes"] = join_names(blocked_nodes_);
  if (!keep_norm_statistics_) out["keep-norm-statistics"] = "0";
  return out;
}

namespace {

/// Whether `n` may run in float16 (conditions 1, 2, 5 and 6 of the header); the block
/// lists (3, 4) are the caller's.
bool convertible(const ir::graph& g, const ir::node& n, const slot_rule& rule, const conversion_plan& plan) {
  if (!n.subgraphs().empty() || rule.reads_any) return false;
  bool absent = false;
  bool has_float_input = (n.is("Constant") || n.is("ConstantOfShape")) && (constant_value(n, &absent) || absent);
  if ((n.is("Constant") || n.is("ConstantOfShape")) && !has_float_input) return false;
  for (std::size_t i = 0; i < n.inputs().size(); ++i) {
    if (!rule.input(i) || n.input(i) == nullptr) continue;
    if (elem_of(n.input(i), plan) != data_type::float32) return false;
    has_float_input = true;
  }
  if (!has_float_input) return false;
  for (std::size_t i = 0; i < n.outputs().size(); ++i) {
    const ir::value* out = n.output(i);
    if (out == nullptr || !rule.output(i)) continue;
    const data_type t = out->elem_type();
    if (t != data_type::float32 && t != data_type::undefined) return false;
    for (const ir::use& u : out->uses()) {
      if (u.user->owner() != &g) return false;
    }
  }
  return true;
}

/// Phase one: decides every node, touching nothing.
/// Whether `n`'s definition at `opset` accepts float16. Equal alone among the ops the pass
/// knows gained float16 after opset 7 (at 11); below it Equal stays float32, which needs no
/// newer opset for the rest of the model.
bool takes_float16(const ir::node& n, std::int64_t opset) { return !(n.is("Equal") && opset < 11); }

conversion_plan plan_conversion(const ir::graph& g, const std::set<std::string, std::less<>>& blocked_ops,
                                const std::set<std::string, std::less<>>& blocked_nodes, bool keep_io_types,
                                const std::set<const ir::node*>& kept_statistics, std::int64_t opset) {
  conversion_plan plan;
  for (const ir::node* n : g.nodes()) {
    const std::optional<slot_rule> rule = float_slots(*n);
    if (!rule || !takes_float16(*n, opset)) continue;
    infer_outputs(*n, *rule, plan);
    if (!convertible(g, *n, *rule, plan)) continue;
    if (blocked_ops.contains(n->op_type()) || (!n->name().empty() && blocked_nodes.contains(n->name()))) {
      ++plan.blocked;
      continue;
    }
    if (kept_statistics.contains(n)) {
      ++plan.statistics_kept;
      continue;
    }
    plan.converted.insert(n);
    for (std::size_t i = 0; i < n->outputs().size(); ++i) {
      if (n->output(i) && rule->output(i)) plan.half.insert(n->output(i));
    }
  }
  if (!keep_io_types) {
    // A float32 feed becomes float16 when a converted node reads it as 'T'.
    for (const ir::value* in : g.inputs()) {
      if (in->is_initializer() || in->elem_type() != data_type::float32) continue;
      for (const ir::use& u : in->uses()) {
        const std::optional<slot_rule> rule = float_slots(*u.user);
        if (plan.converted.contains(u.user) && rule && rule->input(u.input_index)) {
          plan.half.insert(in);
          break;
        }
      }
    }
  }
  return plan;
}

void retype(ir::value* v, data_type t) {
  if (!v->type() || !v->type()->is_tensor) return;
  ir::value_type type = *v->type();
  type.elem_type = t;
  v->set_type(std::move(type));
}

/// Phase two: applies a plan. Casts are shared per value and inserted before their first
/// reader, new float16 constants are shared per original constant.
class converter {
 public:
  converter(ir::graph& g, pass_context& ctx, const conversion_plan& plan) : g_(g), ctx_(ctx), plan_(plan) {}

  void run(bool keep_io_types) {
    for (ir::node* n : g_.node_list()) {
      const std::optional<slot_rule> rule = float_slots(*n);
      if (plan_.converted.contains(n)) {
        convert(n, *rule);
      } else if (!rule || !rule->reads_any) {
        for (std::size_t i = 0; i < n->inputs().size(); ++i) feed_float(n, i);
      }
    }
    for (ir::value* in : g_.inputs()) {
      if (plan_.half.contains(in)) retype(in, data_type::float16);
    }
    if (keep_io_types) restore_output_types();
    // Only constants reach half_constants_, so an original listed as a graph input is an
    // IR < 4 listing, not a feed, and may go with it.
    for (auto& [original, half] : half_constants_) {
      if (!original->has_uses() && !original->is_graph_output()) g_.erase_value(original);
    }
    ctx_.count("casts-inserted", casts_);
    ctx_.count("initializers-converted", static_cast<std::int64_t>(half_constants_.size()));
    ctx_.count("clamped-values", clamped_);
  }

 private:
  void convert(ir::node* n, const slot_rule& rule) {
    for (std::size_t i = 0; i < n->inputs().size(); ++i) {
      ir::value* v = n->input(i);
      if (v == nullptr) continue;
      if (!rule.input(i)) {
        feed_float(n, i);  // e.g. Resize's roi computed by a converted node
      } else if (plan_.half.contains(v)) {
        continue;
      } else if (ctx_.is_constant(*v) && v->initializer()->has_data()) {
        g_.set_input(n, i, half_constant(v));
      } else {
        g_.set_input(n, i, cast(v, data_type::float16, n, half_casts_));
      }
    }
    if (n->is("Constant") || n->is("ConstantOfShape")) convert_value_attribute(n);
    for (std::size_t i = 0; i < n->outputs().size(); ++i) {
      if (n->output(i) && rule.output(i)) retype(n->output(i), data_type::float16);
    }
  }

  /// Makes input `i` of a node that stays float32 read float32.
  void feed_float(ir::node* n, std::size_t i) {
    ir::value* v = n->input(i);
    if (v != nullptr && plan_.half.contains(v)) g_.set_input(n, i, cast(v, data_type::float32, n, float_casts_));
  }

  void convert_value_attribute(ir::node* n) {
    bool absent = false;
    const ir::tensor* value = constant_value(*n, &absent);
    ir::tensor half;
    if (value != nullptr) {
      const std::vector<float> floats = value->values<float>();
      half = to_half(value->dims, std::vector<double>(floats.begin(), floats.end()), clamped_);
      half.name = value->name;
    } else {
      half = to_half({1}, {0.0}, clamped_);  // ConstantOfShape's default value, 0.0f
    }
    n->set_attribute(ir::attribute::make_tensor("value", std::move(half)));
  }

  ir::value* half_constant(ir::value* v) {
    auto [it, inserted] = half_constants_.try_emplace(v, nullptr);
    if (inserted) {
      const std::optional<std::vector<double>> values = ir::constant_floats(v, ctx_.ir_version());
      expects(values.has_value(), "a float32 constant reads as floats");
      it->second = g_.add_initializer(g_.unique_name(v->name() + "_fp16"),
                                      to_half(v->initializer()->dims, *values, clamped_));
    }
    return it->second;
  }

  ir::value* cast(ir::value* v, data_type to, ir::node* before,
                  std::unordered_map<const ir::value*, ir::value*>& shared) {
    auto [it, inserted] = shared.try_emplace(v, nullptr);
    if (inserted) it->second = add_cast(v, to, g_.unique_name(v->name() + (to == data_type::float16 ? "_fp16" : "_fp32")), before);
    return it->second;
  }

  ir::value* add_cast(ir::value* v, data_type to, std::string out_name, ir::node* before) {
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_int("to", static_cast<std::int64_t>(to)));
    ir::node* c = g_.add_node(ir::node_spec{"Cast", {v}, {out_name}, std::move(attrs), "cast_" + out_name, {}}, before);
    ir::value_type type = v->type() ? *v->type() : ir::value_type{};
    type.elem_type = to;
    c->output(0)->set_type(std::move(type));
    ++casts_;
    return c->output(0);
  }

  /// Graph outputs computed in float16 get their float32 type back through a Cast that
  /// takes over their name.
  void restore_output_types() {
    for (std::size_t k = 0; k < g_.outputs().size(); ++k) {
      ir::value* out = g_.outputs()[k];
      if (!plan_.half.contains(out) || out->is_graph_input()) continue;
      auto done = float_casts_by_name_.find(out->name());
      if (done != float_casts_by_name_.end()) {  // the same value listed twice
        g_.set_output(k, done->second);
        continue;
      }
      const std::string name = out->name();
      g_.rename(out, g_.unique_name(name + "_fp16"));
      ir::value* restored = add_cast(out, data_type::float32, name, nullptr);
      g_.set_output(k, restored);
      float_casts_by_name_.emplace(name, restored);
    }
  }

  ir::graph& g_;
  pass_context& ctx_;
  const conversion_plan& plan_;
  std::unordered_map<const ir::value*, ir::value*> half_casts_;   // float32 value -> its Cast to float16
  std::unordered_map<const ir::value*, ir::value*> float_casts_;  // float16 value -> its Cast to float32
  std::unordered_map<ir::value*, ir::value*> half_constants_;     // float32 initializer -> float16 copy
  std::unordered_map<std::string, ir::value*> float_casts_by_name_;
  std::int64_t casts_ = 0;
  std::int64_t clamped_ = 0;
};

}  // namespace

bool to_fp16::run(ir::graph& g, pass_context& ctx) {
  const std::set<const ir::node*> statistics =
      keep_norm_statistics_ ? quant::detail::squared_statistics(g, ctx.ir_version()) : std::set<const ir::node*>{};
  const conversion_plan plan = plan_conversion(g, blocked_ops_, blocked_nodes_, keep_io_types_, statistics, ctx.onnx_opset());
  ctx.count("nodes-blocked", plan.blocked);
  ctx.count("norm-statistics-kept", plan.statistics_kept);
  if (plan.converted.empty()) return false;
  converter(g, ctx, plan).run(keep_io_types_);
  const auto converted = static_cast<std::int64_t>(plan.converted.size());
  ctx.rewrote(converted);
  ctx.count("nodes-converted", converted);
  return true;
}

}  // namespace inferopt
