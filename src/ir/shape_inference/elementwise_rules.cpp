// Elementwise ops: one input's shape, or the broadcast of several. Integer arithmetic on
// tracked values is carried along, as exporters compute shapes with Add, Mul, Div and Where.

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using shape_rules::broadcast;

std::optional<sym_shape> broadcast_inputs(const inference_context& ctx) {
  std::optional<sym_shape> out = sym_shape{};
  for (std::size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const sym_shape* d = ctx.dims(i);
    if (!d) return std::nullopt;
    out = broadcast<sym_dim>(*out, *d);
  }
  return out;
}

sym_dim add(const sym_dim& a, const sym_dim& b) { return a + b; }
sym_dim sub(const sym_dim& a, const sym_dim& b) { return a - b; }
sym_dim mul(const sym_dim& a, const sym_dim& b) { return a * b; }
/// Integer Div truncates; shape arithmetic divides non-negative sizes, where that is floor.
sym_dim div(const sym_dim& a, const sym_dim& b) {
  const auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return *cb == 0 ? sym_dim{} : sym_dim(*ca / *cb);
  return floor_div(a, b);
}
/// Integer Mod with fmod=0 takes the divisor's sign (as Python's %).
sym_dim mod(const sym_dim& a, const sym_dim& b) {
  const auto ca = a.constant(), cb = b.constant();
  if (!ca || !cb || *cb == 0) return sym_dim{};
  const std::int64_t r = *ca % *cb;
  return (r != 0 && ((r < 0) != (*cb < 0))) ? r + *cb : r;
}
sym_dim known_or(const sym_dim& a, const sym_dim& b, bool pick_min) {
  const auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return pick_min ? std::min(*ca, *cb) : std::max(*ca, *cb);
  return sym_dim{};
}
sym_dim min_of(const sym_dim& a, const sym_dim& b) { return known_or(a, b, true); }
sym_dim max_of(const sym_dim& a, const sym_dim& b) { return known_or(a, b, false); }
sym_dim equal(const sym_dim& a, const sym_dim& b) {
  if (a == b) return 1;
  if (a.constant() && b.constant()) return 0;
  // A dim against a negative number (the -1 of Reshape/Expand tricks), or two expressions
  // a nonzero number apart, are never equal.
  const auto ca = a.constant(), cb = b.constant();
  if ((ca && *ca < 0 && b.non_negative()) || (cb && *cb < 0 && a.non_negative())) return 0;
  if (const auto gap = (a - b).constant(); gap && *gap != 0) return 0;
  return sym_dim{};
}

template <sym_dim (*Op)(const sym_dim&, const sym_dim&)>
void arithmetic(inference_context& ctx) {
  value_facts out{ctx.input(0).elem, broadcast_inputs(ctx), std::nullopt};
  if (out.dims && trackable(out.elem, *out.dims)) out.values = broadcast_values(ctx.input(0), ctx.input(1), Op);
  ctx.set_output(0, std::move(out));
}

/// Sum, Mean, Max, Min: any number of inputs.
void variadic(inference_context& ctx) {
  value_facts out{ctx.input(0).elem, broadcast_inputs(ctx), std::nullopt};
  if (ctx.input_count() == 2 && out.dims && trackable(out.elem, *out.dims)) {
    if (ctx.node().op_type() == "Max") out.values = broadcast_values(ctx.input(0), ctx.input(1), max_of);
    if (ctx.node().op_type() == "Min") out.values = broadcast_values(ctx.input(0), ctx.input(1), min_of);
  }
  ctx.set_output(0, std::move(out));
}

void comparison(inference_context& ctx) {
  value_facts out{data_type::boolean, broadcast_inputs(ctx), std::nullopt};
  if (ctx.node().op_type() == "Equal" && out.dims && trackable(out.elem, *out.dims)) {
    out.values = broadcast_values(ctx.input(0), ctx.input(1), equal);
  }
  ctx.set_output(0, std::move(out));
}

void to_bool(inference_context& ctx) { ctx.set_output(0, value_facts{data_type::boolean, ctx.input(0).dims, std::nullopt}); }

sym_dim negated(const sym_dim& v) { return sym_dim(0) - v; }
sym_dim absolute(const sym_dim& v) {
  if (const auto c = v.constant()) return *c < 0 ? -*c : *c;
  return v.non_negative() ? v : sym_dim{};
}

/// Neg and Abs: tracked values mapped one by one.
template <sym_dim (*Op)(const sym_dim&)>
void map_values(inference_context& ctx) {
  value_facts out = ctx.input(0);
  if (out.values) {
    for (sym_dim& v : *out.values) v = Op(v);
  }
  ctx.set_output(0, std::move(out));
}

void broadcast_only(inference_context& ctx) { ctx.set_output(0, value_facts{ctx.input(0).elem, broadcast_inputs(ctx), std::nullopt}); }

void where(inference_context& ctx) {
  value_facts out{ctx.input(1).elem, broadcast_inputs(ctx), std::nullopt};
  const value_facts& c = ctx.input(0);
  const value_facts& x = ctx.input(1);
  const value_facts& y = ctx.input(2);
  if (out.dims && trackable(out.elem, *out.dims) && c.values && x.values && y.values) {
    const std::size_t n = std::max(c.values->size(), std::max(x.values->size(), y.values->size()));
    std::vector<sym_dim> values;
    auto at = [&](const std::vector<sym_dim>& v, std::size_t i) { return v.size() == 1 ? v[0] : i < v.size() ? v[i] : sym_dim{}; };
    for (std::size_t i = 0; i < n; ++i) {
      const auto cond = at(*c.values, i).constant();
      values.push_back(!cond ? sym_dim{} : *cond ? at(*x.values, i) : at(*y.values, i));
    }
    out.values = std::move(values);
  }
  ctx.set_output(0, std::move(out));
}

void cast(inference_context& ctx) {
  value_facts out = ctx.input(0);
  if (ctx.node().op_type() == "CastLike") out.elem = ctx.input(1).elem;
  else out.elem = static_cast<data_type>(ctx.node().attr_int("to", 0));
  if (out.dims && !trackable(out.elem, *out.dims)) out.values.reset();
  ctx.set_output(0, std::move(out));
}

/// Dropout: output 0 as the input, output 1 a mask of the same shape (boolean from opset 10,
/// the input's type before).
void dropout(inference_context& ctx) {
  ctx.set_output(0, ctx.input(0));
  const data_type mask = ctx.opset() >= 10 ? data_type::boolean : ctx.input(0).elem;
  ctx.set_output(1, value_facts{mask, ctx.input(0).dims, std::nullopt});
}

void unary(inference_context& ctx) { ctx.set_output(0, value_facts{ctx.input(0).elem, ctx.input(0).dims, std::nullopt}); }

}  // namespace

void register_elementwise_rules(rule_table& t) {
  for (const char* op : {"Acos",     "Acosh",  "Asin",     "Asinh",          "Atan",      "Atanh",
                         "Ceil",    "Cos",      "Cosh",   "Elu",      "Erf",            "Exp",       "Floor",
                         "Gelu",    "HardSigmoid", "HardSwish", "LeakyRelu", "Log",      "Reciprocal", "Relu",
                         "Round",   "Selu",     "Sigmoid", "Sign",    "Sin",            "Sinh",      "Softplus",
                         "Softsign", "Sqrt",    "Tan",    "Tanh",     "ThresholdedRelu", "Clip",     "Celu",
                         "Mish",    "BitwiseNot", "Shrink"}) {
    t[op] = unary;
  }
  t["com.microsoft.Gelu"] = unary;
  t["com.microsoft.FastGelu"] = unary;  // the bias runs along the last axis
  t["com.microsoft.BiasGelu"] = unary;
  t["com.microsoft.QuickGelu"] = unary;
  t["Abs"] = map_values<absolute>;
  t["Identity"] = same_as_input;
  t["Neg"] = map_values<negated>;
  t["Add"] = arithmetic<add>;
  t["Sub"] = arithmetic<sub>;
  t["Mul"] = arithmetic<mul>;
  t["Div"] = arithmetic<div>;
  t["Mod"] = [](inference_context& ctx) {
    if (ctx.node().attr_int("fmod", 0) != 0) return broadcast_only(ctx);
    arithmetic<mod>(ctx);
  };
  for (const char* op : {"Pow", "PRelu", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    t[op] = broadcast_only;
  }
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) t[op] = variadic;
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}) t[op] = comparison;
  for (const char* op : {"Not", "IsInf", "IsNaN"}) t[op] = to_bool;
  t["Where"] = where;
  t["Cast"] = cast;
  t["CastLike"] = cast;
  t["Dropout"] = dropout;
}

}  // namespace inferopt::ir::shape_inference_detail
