#include "int8_groups.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/runtime/kernel.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "graph_rewrite_util.hpp"
#include "kernels/int8_nhwc.hpp"
#include "kernels/nn_common.hpp"

namespace inferopt::runtime::detail {

namespace {

using nn::executor_fused_domain;

bool is_int8(data_type t) { return t == data_type::uint8 || t == data_type::int8; }

bool is_scalar_scale(const ir::value* v) {
  const auto s = nn::constant_scales(v);
  return s && s->size() == 1 && s->front() > 0.0f && std::isfinite(s->front());
}

bool is_scalar_zero_point(const ir::value* v) {
  const auto z = nn::constant_zero_points(v);
  return z && z->size() == 1 && is_int8(v->initializer()->dtype);
}

/// A QuantizeLinear or DequantizeLinear with constant scalar scale and zero point (given:
/// its type is the int8 type), no block size, whose input 0 is an activation.
bool is_per_tensor_qdq(const ir::node& n, const char* op) {
  return n.is(op) && n.inputs().size() == 3 && n.outputs().size() == 1 && n.input(0) && !n.input(0)->is_constant() &&
         is_scalar_scale(n.input(1)) && is_scalar_zero_point(n.input(2)) && n.attr_int("block_size", 0) == 0;
}

/// An int8 activation `q` read through DequantizeLinear `dq`.
struct dequantized {
  ir::node* dq;
  ir::value* q;
  data_type type;
};

std::optional<dequantized> dequantized_activation(ir::value* v) {
  ir::node* dq = v ? v->producer() : nullptr;
  if (!dq || !is_per_tensor_qdq(*dq, "DequantizeLinear")) return std::nullopt;
  return dequantized{dq, dq->input(0), dq->input(2)->initializer()->dtype};
}

/// The QuantizeLinear that alone reads `y` (directly, or through a Relu that alone reads y).
struct requantized {
  ir::node* relu = nullptr;
  ir::node* q = nullptr;
  data_type type = data_type::undefined;
};

std::optional<requantized> requantized_output(ir::value* y) {
  requantized r;
  ir::node* user = y->is_graph_output() ? nullptr : ir::sole_user(y);
  if (user && user->is("Relu") && !user->output(0)->is_graph_output()) {
    r.relu = user;
    user = ir::sole_user(user->output(0));
  }
  if (!user || !is_per_tensor_qdq(*user, "QuantizeLinear")) return std::nullopt;
  r.q = user;
  r.type = user->input(2)->initializer()->dtype;
  return r;
}

/// A weight's int8 values, its scale value and the scales.
struct quantized_weights {
  ir::node* dq;
  ir::value* q;
  ir::value* scale;
  std::vector<float> scales;
};

/// The int8 weights `w` when it is DequantizeLinear of a constant int8 tensor of `rank` dims
/// with zero points 0 and one scale, or one per index of dim `channel_axis` (a conv's output
/// channels: 0; a Gemm's output columns: 0 of B^T with transB, else 1).
std::optional<quantized_weights> weights_of(ir::value* w, std::size_t rank, std::int64_t channel_axis) {
  ir::node* dq = w ? w->producer() : nullptr;
  if (!dq || !dq->is("DequantizeLinear") || dq->inputs().size() < 2 || dq->attr_int("block_size", 0) != 0) return std::nullopt;
  ir::value* q = dq->input(0);
  if (!q || !q->is_constant() || !q->initializer()->has_data() || q->initializer()->dtype != data_type::int8 ||
      q->initializer()->dims.size() != rank) {
    return std::nullopt;
  }
  const auto scales = nn::constant_scales(dq->input(1));
  std::int64_t axis = dq->attr_int("axis", 1);
  if (axis < 0) axis += static_cast<std::int64_t>(rank);
  const std::int64_t channels = q->initializer()->dims[channel_axis];
  const bool per_channel = scales && static_cast<std::int64_t>(scales->size()) == channels && axis == channel_axis;
  if (!scales || (scales->size() != 1 && !per_channel)) return std::nullopt;
  if (dq->inputs().size() > 2 && dq->input(2)) {
    const auto zeros = nn::constant_zero_points(dq->input(2));
    if (!zeros || std::any_of(zeros->begin(), zeros->end(), [](std::int32_t z) { return z != 0; })) return std::nullopt;
  }
  return quantized_weights{dq, q, dq->input(1), *scales};
}

/// The conv's bias in accumulator units (x_scale * w_scale[m]) as int32, from DequantizeLinear
/// of an int32 constant (taken as is when its scale is that product, as onnxruntime takes it)
/// or a float constant; an empty vector when there is no bias; nullopt when it is neither.
std::optional<std::vector<std::int32_t>> accumulator_bias(const ir::node& conv, float x_scale,
                                                          const std::vector<float>& w_scales, std::int64_t m) {
  if (conv.inputs().size() < 3 || !conv.input(2)) return std::vector<std::int32_t>{};
  const ir::value* b = conv.input(2);
  std::vector<double> values;
  if (const auto floats = nn::constant_scales(b)) {
    values.assign(floats->begin(), floats->end());
  } else if (const ir::node* dq = b->producer(); dq && dq->is("DequantizeLinear") && dq->inputs().size() >= 2) {
    const auto q = nn::constant_zero_points(dq->input(0));
    const auto scale = nn::constant_scales(dq->input(1));
    const bool zero = dq->inputs().size() < 3 || !dq->input(2) || nn::constant_zero_points(dq->input(2)) == std::vector<std::int32_t>{0};
    if (!q || !scale || static_cast<std::int64_t>(q->size()) != m || (scale->size() != 1 && static_cast<std::int64_t>(scale->size()) != m) ||
        !zero || dq->input(0)->initializer()->dtype != data_type::int32) {
      return std::nullopt;
    }
    auto scale_of = [&](std::size_t i) { return (*scale)[scale->size() == 1 ? 0 : i]; };
    bool accumulator_units = true;
    for (std::size_t i = 0; i < q->size(); ++i) {
      values.push_back(static_cast<double>((*q)[i]) * scale_of(i));
      const float unit = x_scale * w_scales[w_scales.size() == 1 ? 0 : i];
      accumulator_units = accumulator_units && std::abs(unit - scale_of(i)) <= 1e-6f * scale_of(i);
    }
    if (accumulator_units) return *q;
  } else {
    return std::nullopt;
  }
  if (static_cast<std::int64_t>(values.size()) != m) return std::nullopt;
  std::vector<std::int32_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double unit = static_cast<double>(x_scale) * w_scales[w_scales.size() == 1 ? 0 : i];
    const double v = std::nearbyint(values[i] / unit);
    out[i] = static_cast<std::int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
  }
  return out;
}

class int8_rewrite {
 public:
  int8_rewrite(ir::graph& g, std::int64_t opset) : g_(g), opset_(opset) {}

  int run() {
    const std::vector<ir::node*> order(g_.nodes().begin(), g_.nodes().end());
    for (ir::node* n : order) {
      if (n->is_dead()) continue;
      if (n->is("Conv") || n->op_type() == "FusedConv") convert_conv(*n);
      else if (n->is("Add")) convert_add(*n);
      else if (n->is("MaxPool")) convert_max_pool(*n);
      else if (n->is("GlobalAveragePool") || n->is("AveragePool")) convert_global_average(*n);
      else if (n->is("Gemm")) convert_gemm(*n);
    }
    if (!groups_.empty()) finish();
    fold_constant_dequantize();
    return added_;
  }

 private:
  /// A converted group: its nodes (which go away), its QuantizeLinear's output and what now
  /// computes it (channels-last when `channels_last`).
  struct group {
    std::vector<ir::node*> nodes;
    ir::value* output;
    ir::value* replacement;
    bool channels_last;
  };

  /// The int32 accumulator-unit bias of `n`'s int8 node as a new initializer; null when empty.
  ir::value* bias_initializer(const ir::node& n, const std::vector<std::int32_t>& bias) {
    if (bias.empty()) return nullptr;
    std::string name = g_.unique_name(n.output(0)->name() + ".int8_bias");
    return g_.add_initializer(name, ir::tensor::from_values<std::int32_t>(name, {static_cast<std::int64_t>(bias.size())}, bias));
  }

  /// A Conv, or a com.microsoft FusedConv whose activation is Relu (without Z).
  static bool is_int8_conv_candidate(const ir::node& n) {
    if (n.is("Conv")) return true;
    return n.domain() == "com.microsoft" && n.op_type() == "FusedConv" && n.attr_string("activation", "") == "Relu" &&
           n.inputs().size() <= 3;
  }

  void convert_conv(ir::node& n) {
    if (!is_int8_conv_candidate(n) || n.inputs().size() < 2 || n.outputs().size() != 1) return;
    const auto x = dequantized_activation(n.input(0));
    const auto w = weights_of(n.input(1), 4, 0);
    if (!x || !w) return;  // X is 4-D, as a 2-D conv reads it: it can be held channels-last
    const auto out = requantized_output(n.output(0));
    if (!out) return;
    const std::vector<std::int64_t>& w_dims = w->q->initializer()->dims;
    const std::int64_t channels = w_dims[1] * n.attr_int("group", 1);
    if (!nn::int8_conv_runs(n, w_dims, probe_shape(*n.input(0), channels), x->type, out->type)) return;
    const float x_scale = nn::constant_scales(x->dq->input(1))->front();
    const auto bias = accumulator_bias(n, x_scale, w->scales, w_dims[0]);
    if (!bias) return;
    ir::value* bias_value = bias_initializer(n, *bias);
    std::vector<ir::value*> inputs{channels_last(*x->q, n), x->dq->input(1), x->dq->input(2), w->q, w->scale, nullptr,
                                   out->q->input(1), out->q->input(2), bias_value};
    const bool fused_relu = n.find_attribute("activation") != nullptr;
    std::vector<ir::attribute> attributes;  // Conv's, and the activation
    for (ir::attribute& a : n.attributes()) {
      if (a.name != "activation_params") attributes.push_back(std::move(a));  // n goes away
    }
    if (out->relu && !fused_relu) attributes.push_back(ir::attribute::make_string("activation", "Relu"));
    add_group(n, *out, "QLinearConvNhwc", std::move(inputs), std::move(attributes), true);
  }

  void convert_add(ir::node& n) {
    if (n.inputs().size() != 2 || n.outputs().size() != 1) return;
    const auto a = dequantized_activation(n.input(0));
    const auto b = dequantized_activation(n.input(1));
    if (!a || !b || a->type != b->type || !same_static_shape(*n.input(0), *n.input(1))) return;
    const auto out = requantized_output(n.output(0));
    if (!out || out->type != a->type) return;
    // Elementwise: it runs in whichever layout its operands share, entering channels-last when
    // one is (same_static_shape says both are then 4-D).
    const bool last = twin_.count(a->q) || twin_.count(b->q);
    if (last && n.input(0)->type()->dims->size() != 4) return;
    ir::value* ua = last ? channels_last(*a->q, n) : a->q;
    ir::value* ub = last ? channels_last(*b->q, n) : b->q;
    std::vector<ir::value*> inputs{ua, a->dq->input(1), a->dq->input(2), ub, b->dq->input(1), b->dq->input(2),
                                   out->q->input(1), out->q->input(2)};
    std::vector<ir::attribute> attributes;
    if (out->relu) attributes.push_back(ir::attribute::make_string("activation", "Relu"));
    add_group(n, *out, "QLinearAdd", std::move(inputs), std::move(attributes), last);
  }

  void convert_max_pool(ir::node& n) {
    if (n.inputs().size() != 1 || n.outputs().size() != 1) return;
    const std::vector<std::int64_t> kernel = n.attr_ints("kernel_shape", {});
    const std::vector<std::int64_t> dilations = n.attr_ints("dilations", {});
    if (kernel.size() != 2 || n.attr_int("storage_order", 0) != 0 ||
        std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; })) {
      return;
    }
    const auto x = dequantized_activation(n.input(0));
    if (!x) return;  // X is 4-D, as a 2-D pool reads it: it can be held channels-last
    const auto out = requantized_output(n.output(0));
    // Max commutes with quantization only between equal parameters; a Relu would need a clamp.
    if (!out || out->relu || out->type != x->type ||
        nn::constant_scales(out->q->input(1)) != nn::constant_scales(x->dq->input(1)) ||
        nn::constant_zero_points(out->q->input(2)) != nn::constant_zero_points(x->dq->input(2))) {
      return;
    }
    add_group(n, *out, "MaxPoolNhwc", {channels_last(*x->q, n)}, std::move(n.attributes()), true);
  }

  /// Gemm(DequantizeLinear(uint8 A), DequantizeLinear(int8 constant B), C) with a float output
  /// (a classifier's last layer): QGemm, which has no QuantizeLinear to fold, so the output
  /// stays where it is and only the group's DequantizeLinear nodes go.
  void convert_gemm(ir::node& n) {
    if (n.inputs().size() < 2 || n.outputs().size() != 1 || n.attr_int("transA", 0) != 0 ||
        n.attr_float("alpha", 1.0f) != 1.0f || (n.inputs().size() > 2 && n.attr_float("beta", 1.0f) != 1.0f)) {
      return;
    }
    const auto a = dequantized_activation(n.input(0));
    if (!a || a->type != data_type::uint8) return;
    const bool trans_b = n.attr_int("transB", 0) != 0;
    const auto b = weights_of(n.input(1), 2, trans_b ? 0 : 1);
    if (!b) return;
    const std::vector<std::int64_t>& dims = b->q->initializer()->dims;
    const std::int64_t k = trans_b ? dims[1] : dims[0], columns = trans_b ? dims[0] : dims[1];
    if (!nn::int8_gemm_runs(k, columns)) return;
    const float a_scale = nn::constant_scales(a->dq->input(1))->front();
    const auto bias = accumulator_bias(n, a_scale, b->scales, columns);
    if (!bias) return;
    ir::value* bias_value = bias_initializer(n, *bias);
    std::vector<ir::attribute> attributes = only(ir::attribute::make_int("transB", trans_b ? 1 : 0));
    std::string label = n.label();
    n.set_name("");
    ir::node* q = g_.add_node({"QGemm", {a->q, a->dq->input(1), a->dq->input(2), b->q, b->scale, nullptr, bias_value}, {""},
                               std::move(attributes), std::move(label), executor_fused_domain}, &n);
    ++added_;
    q->output(0)->set_type(n.output(0)->type());
    groups_.push_back({{&n}, n.output(0), q->output(0), false});
  }

  /// GlobalAveragePool, or an AveragePool whose window is its whole (static) input, unpadded.
  void convert_global_average(ir::node& n) {
    if (n.inputs().size() != 1 || n.outputs().size() != 1) return;
    if (n.is("AveragePool")) {
      const ir::value* in = n.input(0);
      if (!in->type() || !in->type()->has_static_shape() || in->type()->dims->size() != 4) return;
      const auto& d = *in->type()->dims;
      const std::vector<std::int64_t> pads = n.attr_ints("pads", {});
      const bool unpadded = std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; }) &&
                            (n.attr_string("auto_pad", "NOTSET") == "NOTSET" || n.attr_string("auto_pad", "NOTSET") == "VALID");
      if (!unpadded || n.attr_ints("kernel_shape", {}) != std::vector<std::int64_t>{d[2].value(), d[3].value()}) return;
    }
    const auto x = dequantized_activation(n.input(0));
    // GlobalAveragePool takes any rank: X must be known 4-D (or already channels-last).
    const ir::value* in = n.input(0);
    if (!x || (!twin_.count(x->q) && (!in->type() || !in->type()->dims || in->type()->dims->size() != 4))) return;
    const auto out = requantized_output(n.output(0));
    if (!out || out->relu || out->type != x->type) return;
    add_group(n, *out, "QLinearGlobalAveragePoolNhwc",
              {channels_last(*x->q, n), x->dq->input(1), x->dq->input(2), out->q->input(1), out->q->input(2)}, {}, true);
  }

  /// Whether a and b have one known static shape: no broadcasting.
  static bool same_static_shape(const ir::value& a, const ir::value& b) {
    if (!a.type() || !b.type() || !a.type()->dims || !b.type()->dims) return false;
    const auto& da = *a.type()->dims;
    const auto& db = *b.type()->dims;
    if (da.size() != db.size()) return false;
    for (std::size_t i = 0; i < da.size(); ++i) {
      if (!da[i].is_static() || !db[i].is_static() || da[i].value() != db[i].value()) return false;
    }
    return true;
  }

  /// The channels-last form of int8 activation `q`, placed before `before` if new: its twin;
  /// where a QuantizeLinear of a float tensor makes `q`, a QuantizeLinearNhwc of that tensor
  /// (the QuantizeLinear goes if nothing else reads `q`); else a Transpose of `q`.
  ir::value* channels_last(ir::value& q, ir::node& before) {
    if (auto found = twin_.find(&q); found != twin_.end()) return found->second;
    ir::node* quantizer = q.producer();
    ir::node* t = nullptr;
    if (quantizer && is_per_tensor_qdq(*quantizer, "QuantizeLinear") && quantizer->input(0)->elem_type() == data_type::float32) {
      t = g_.add_node({"QuantizeLinearNhwc", {quantizer->input(0), quantizer->input(1), quantizer->input(2)}, {""}, {}, "",
                       executor_fused_domain}, &before);
      entry_quantizers_.push_back(quantizer);
    } else {
      t = g_.add_node({"Transpose", {&q}, {""}, only(ir::attribute::make_ints("perm", {0, 2, 3, 1})), "", ""}, &before);
    }
    ++added_;
    t->output(0)->set_type(held_type(q, q.elem_type(), true));
    twin_[&q] = t->output(0);
    return t->output(0);
  }

  /// The type of `v`'s values as held: element type `type`, dims [N, C, H, W] as
  /// [N, H, W, C] when `channels_last`. Kernels whose input shape is thereby static hold their
  /// weights once (kernels/int8_weights.hpp).
  static ir::value_type held_type(const ir::value& v, data_type type, bool channels_last) {
    ir::value_type t;
    t.elem_type = type;
    const std::optional<ir::value_type>& from = v.type();
    if (from && from->dims && (!channels_last || from->dims->size() == 4)) {
      const ir::shape& d = *from->dims;
      t.dims = channels_last ? ir::shape{d[0], d[2], d[3], d[1]} : d;
    }
    return t;
  }

  /// Adds the int8 node that replaces anchor `n` and its requantization `out`.
  void add_group(ir::node& n, const requantized& out, std::string op, std::vector<ir::value*> inputs,
                 std::vector<ir::attribute> attributes, bool channels_last) {
    std::string label = n.label();
    n.set_name("");
    ir::node* fused = g_.add_node({std::move(op), std::move(inputs), {""}, std::move(attributes), std::move(label), executor_fused_domain}, &n);
    ++added_;
    ir::value* y = out.q->output(0);
    fused->output(0)->set_type(held_type(*y, out.type, channels_last));
    group gr{{&n}, y, fused->output(0), channels_last};
    if (out.relu) gr.nodes.push_back(out.relu);
    gr.nodes.push_back(out.q);
    if (channels_last) twin_[y] = fused->output(0);
    groups_.push_back(std::move(gr));
  }

  /// Points the readers of each group's output at its replacement (through a Transpose back to
  /// the model's layout where that is channels-last), then erases the groups' nodes and the
  /// DequantizeLinear nodes only they read.
  void finish() {
    std::unordered_set<const ir::node*> gone;
    for (const group& gr : groups_) gone.insert(gr.nodes.begin(), gr.nodes.end());
    std::vector<ir::node*> dequantizers;
    for (ir::node* n : g_.nodes()) {
      if (!n->is("DequantizeLinear") || n->output(0)->is_graph_output()) continue;
      const auto& uses = n->output(0)->uses();
      if (std::all_of(uses.begin(), uses.end(), [&](const ir::use& u) { return gone.count(u.user) > 0; })) dequantizers.push_back(n);
    }
    gone.insert(dequantizers.begin(), dequantizers.end());
    std::vector<std::pair<ir::value*, std::string>> renames;
    for (const group& gr : groups_) {
      ir::value* y = gr.output;
      const auto& uses = y->uses();
      const bool read = y->is_graph_output() || std::any_of(uses.begin(), uses.end(), [&](const ir::use& u) { return !gone.count(u.user); });
      if (!read) continue;
      ir::value* replacement = gr.replacement;
      if (gr.channels_last) {
        ir::node* back = g_.add_node({"Transpose", {replacement}, {""}, only(ir::attribute::make_ints("perm", {0, 3, 1, 2})), "", ""}, gr.nodes.back());
        ++added_;
        replacement = back->output(0);
      }
      replacement->set_type(y->type());
      g_.replace_all_uses(y, replacement);
      renames.emplace_back(replacement, y->name());
    }
    std::vector<ir::node*> order;
    for (ir::node* n : g_.nodes()) {
      if (gone.count(n)) order.push_back(n);
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) g_.erase(*it);
    for (ir::node* quantizer : entry_quantizers_) ir::erase_if_unread(g_, quantizer);
    for (auto& [value, name] : renames) g_.rename(value, name);
    g_.compact();
  }

  /// DequantizeLinear of constants (weights of ops left in float) becomes a float constant:
  /// computed once here rather than on every run.
  void fold_constant_dequantize() {
    bool folded = false;
    const std::vector<ir::node*> order(g_.nodes().begin(), g_.nodes().end());
    for (ir::node* n : order) {
      if (!n->is("DequantizeLinear") || n->outputs().size() != 1 || n->output(0)->is_graph_output()) continue;
      std::optional<ir::tensor> values = dequantized_constant(*n);
      if (!values) continue;
      std::string name = g_.unique_name(n->output(0)->name());
      ir::value* c = g_.add_initializer(name, std::move(*values));
      g_.replace_all_uses(n->output(0), c);
      ir::value* q = n->input(0);
      g_.erase(n);
      if (!q->has_uses() && !q->is_graph_output() && !q->is_graph_input()) g_.erase_value(q);
      folded = true;
    }
    if (folded) g_.compact();
  }

  /// DequantizeLinear `n` evaluated by its kernel when its inputs are constants; nullopt
  /// otherwise (or when the kernel refuses them).
  [[nodiscard]] std::optional<ir::tensor> dequantized_constant(const ir::node& n) const {
    const kernel_factory* make = builtin_kernels().find("", "DequantizeLinear", opset_);
    if (!make) return std::nullopt;
    std::vector<tensor> inputs;
    inputs.reserve(n.inputs().size());
    std::vector<const tensor*> pointers;
    for (const ir::value* in : n.inputs()) {
      if (in && (!in->is_constant() || !in->initializer()->has_data())) return std::nullopt;
      if (in) inputs.push_back(tensor::from_ir(*in->initializer()));
      pointers.push_back(in ? &inputs.back() : nullptr);
    }
    std::vector<tensor> outputs(1);
    try {
      const std::unique_ptr<kernel> k = (*make)(kernel_build_info{n, opset_});
      kernel_context ctx(n, pointers, outputs, 1);
      k->compute(ctx);
    } catch (const error&) {
      return std::nullopt;
    }
    return outputs[0].to_ir("");
  }

  ir::graph& g_;
  std::int64_t opset_;
  std::unordered_map<const ir::value*, ir::value*> twin_;  // int8 activation -> its channels-last form
  std::vector<group> groups_;
  std::vector<ir::node*> entry_quantizers_;  // QuantizeLinear nodes a QuantizeLinearNhwc replaced where read
  int added_ = 0;
};

}  // namespace

int use_int8_kernels(ir::graph& g, std::int64_t opset) { return int8_rewrite(g, opset).run(); }

}  // namespace inferopt::runtime::detail
