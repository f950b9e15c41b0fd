#include "value_facts.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "inferopt/ir/shapes.hpp"
#include "inferopt/ir/verify.hpp"

namespace inferopt::ir::opset {

value_facts::value_facts(const model& m) {
  model copy = m.clone();
  if (!infer_shapes(copy).ran) return;
  take(m.graph(), copy.graph());
}

void value_facts::take(const graph& ours, const graph& inferred) {
  auto& types = inferred_[&ours];
  for (const value* v : inferred.values()) {
    if (v->type() && v->type()->is_tensor) types.emplace(v->name(), *v->type());
  }
  // The copy has the same nodes in the same order, so subgraphs pair up by position.
  const std::vector<node*> a = ours.node_list();
  const std::vector<node*> b = inferred.node_list();
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
    const std::vector<graph*> sa = a[k]->subgraphs();
    const std::vector<graph*> sb = b[k]->subgraphs();
    for (std::size_t s = 0; s < sa.size() && s < sb.size(); ++s) take(*sa[s], *sb[s]);
  }
}

std::optional<value_type> value_facts::type(const value* v) const {
  if (!v) return std::nullopt;
  if (v->type() && v->type()->is_tensor && v->type()->dims) return v->type();
  if (const tensor* t = v->initializer()) return value_type{true, t->dtype, shape(t->dims.begin(), t->dims.end())};
  if (auto g = inferred_.find(v->owner()); g != inferred_.end()) {
    if (auto it = g->second.find(v->name()); it != g->second.end()) return it->second;
  }
  return v->type();
}

std::optional<std::size_t> value_facts::rank(const value* v) const {
  const std::optional<value_type> t = type(v);
  if (t && t->dims) return t->dims->size();
  if (!v || !v->producer()) return std::nullopt;
  if (auto it = produced_.find(v); it != produced_.end()) return it->second;
  const std::optional<std::size_t> r = produced_rank(v);
  produced_[v] = r;
  return r;
}

namespace {

/// Ops whose output 0 has the rank of input 0.
bool keeps_rank(std::string_view op) {
  static const std::set<std::string_view> ops = {
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "AveragePool", "BatchNormalization", "Cast",
      "CastLike", "Ceil", "Celu", "Clip", "Conv", "ConvTranspose", "Cos", "Cosh", "CumSum", "DepthToSpace",
      "DequantizeLinear", "Dropout", "Elu", "Erf", "Exp", "Floor", "Gelu", "GlobalAveragePool", "GlobalLpPool",
      "GlobalMaxPool", "Hardmax", "HardSigmoid", "HardSwish", "Identity", "InstanceNormalization", "IsInf", "IsNaN",
      "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax", "LpNormalization", "LpPool", "LRN", "MaxPool", "Mish",
      "Neg", "Not", "Pad", "PRelu", "QuantizeLinear", "Reciprocal", "Relu", "Resize", "Round", "Selu", "Shrink",
      "Sigmoid", "Sign", "Sin", "Sinh", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Sqrt", "Tan",
      "Tanh", "ThresholdedRelu", "Tile", "Transpose", "Trilu", "Upsample", "GroupNormalization"};
  return ops.contains(op);
}

/// Ops whose output has the largest rank of their inputs (multidirectional broadcasting).
bool broadcasts(std::string_view op) {
  static const std::set<std::string_view> ops = {"Add", "And", "Div", "Equal", "Greater", "GreaterOrEqual", "Less",
                                                 "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "Pow",
                                                 "Sub", "Sum", "Where", "Xor", "Concat"};
  return ops.contains(op);
}

}  // namespace

std::optional<std::size_t> value_facts::produced_rank(const value* v) const {
  const node& n = *v->producer();
  if (!n.is_onnx_domain() || v->producer_output() != 0) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Gemm" || op == "Flatten") return 2;
  if (op == "Shape") return 1;
  if (op == "Size") return 0;
  if (keeps_rank(op)) return rank(n.input(0));
  if (broadcasts(op)) {
    std::size_t most = 0;
    for (const value* in : n.inputs()) {
      const std::optional<std::size_t> r = in ? rank(in) : std::nullopt;
      if (in && !r) return std::nullopt;
      if (r) most = std::max(most, *r);
    }
    return most;
  }
  return std::nullopt;
}

std::optional<std::vector<std::int64_t>> value_facts::dims(const value* v) const {
  const std::optional<value_type> t = type(v);
  if (!t || !t->has_static_shape()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const dim& d : *t->dims) out.push_back(d.value());
  return out;
}

data_type value_facts::elem_type(const value* v) const {
  if (const data_type own = element_type(v); own != data_type::undefined) return own;
  const std::optional<value_type> t = type(v);
  return t ? t->elem_type : data_type::undefined;
}

}  // namespace inferopt::ir::opset
