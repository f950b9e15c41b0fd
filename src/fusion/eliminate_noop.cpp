#include "inferopt/fusion/eliminate_noop.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

using dims_t = std::vector<std::int64_t>;

bool all_zero(const dims_t& v) {
  return std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
}

bool pad_is_noop(const pass_context& ctx, const ir::node& n) {
  const std::optional<ir::int_list> pads = ir::int_list_operand(n, "pads", 1, ctx.onnx_opset() < 11, ctx.ir_version());
  return pads && pads->present && all_zero(pads->values);
}

bool cast_is_noop(const ir::node& n) {
  const ir::attribute* to = n.find_attribute("to");
  const ir::data_type from = n.input(0)->elem_type();
  return to && to->kind == ir::attribute_kind::i && from != ir::data_type::undefined &&
         static_cast<std::int64_t>(from) == to->i;
}

bool reshape_is_noop(const pass_context& ctx, const ir::node& n) {
  const std::optional<dims_t> in = ir::static_dims(n.input(0));
  const std::optional<ir::int_list> target = ir::int_list_operand(n, "shape", 1, ctx.onnx_opset() < 5, ctx.ir_version());
  if (!in || !target || !target->present || target->values.size() != in->size()) return false;
  const bool allow_zero = ctx.onnx_opset() >= 14 && n.attr_int("allowzero", 0) != 0;
  std::size_t inferred = 0;
  for (std::size_t k = 0; k < in->size(); ++k) {
    const std::int64_t t = target->values[k];
    if (t == -1) {
      ++inferred;
    } else if (t != (*in)[k] && !(t == 0 && !allow_zero)) {
      return false;
    }
  }
  // With every other dim equal, a single -1 can only be inferred as x's own dim, unless a 0
  // dim makes the inference ambiguous.
  return inferred == 0 || (inferred == 1 && std::find(in->begin(), in->end(), 0) == in->end());
}

bool transpose_is_noop(const ir::node& n) {
  const ir::attribute* perm = n.find_attribute("perm");
  if (!perm) {
    const std::optional<std::size_t> rank = ir::known_rank(n.input(0));
    return rank && *rank <= 1;
  }
  if (perm->kind != ir::attribute_kind::ints) return false;
  for (std::size_t k = 0; k < perm->ints.size(); ++k) {
    if (perm->ints[k] != static_cast<std::int64_t>(k)) return false;
  }
  return true;
}

bool slice_is_noop(const pass_context& ctx, const ir::node& n) {
  const std::optional<dims_t> in = ir::static_dims(n.input(0));
  if (!in) return false;
  const bool from_attributes = ctx.onnx_opset() < 10;
  const std::optional<ir::int_list> starts = ir::int_list_operand(n, "starts", 1, from_attributes, ctx.ir_version());
  const std::optional<ir::int_list> ends = ir::int_list_operand(n, "ends", 2, from_attributes, ctx.ir_version());
  const std::optional<ir::int_list> axes = ir::int_list_operand(n, "axes", 3, from_attributes, ctx.ir_version());
  std::optional<ir::int_list> steps = ir::int_list{};
  if (!from_attributes) steps = ir::int_list_operand(n, "steps", 4, false, ctx.ir_version());
  if (!starts || !ends || !axes || !steps || !starts->present || !ends->present) return false;
  const std::size_t count = starts->values.size();
  if (ends->values.size() != count || (axes->present && axes->values.size() != count) ||
      (steps->present && steps->values.size() != count)) {
    return false;
  }
  const auto rank = static_cast<std::int64_t>(in->size());
  for (std::size_t k = 0; k < count; ++k) {
    std::int64_t axis = axes->present ? axes->values[k] : static_cast<std::int64_t>(k);
    if (axis < -rank || axis >= rank) return false;
    if (axis < 0) axis += rank;
    const std::int64_t dim = (*in)[static_cast<std::size_t>(axis)];
    if (steps->present && steps->values[k] != 1) return false;
    std::int64_t start = starts->values[k];
    std::int64_t end = ends->values[k];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (std::clamp<std::int64_t>(start, 0, dim) != 0 || end < dim) return false;
  }
  return true;
}

/// numpy broadcasting of `a` with `b` equals `a`.
bool broadcast_keeps(const dims_t& a, const dims_t& b) {
  if (b.size() > a.size()) return false;
  const std::size_t offset = a.size() - b.size();
  for (std::size_t k = 0; k < b.size(); ++k) {
    if (b[k] != 1 && b[k] != a[offset + k]) return false;
  }
  return true;
}

bool expand_is_noop(const pass_context& ctx, const ir::node& n) {
  const std::optional<dims_t> in = ir::static_dims(n.input(0));
  const std::optional<dims_t> target = ir::constant_ints(n.input(1), ctx.ir_version());
  return in && target && broadcast_keeps(*in, *target);
}

/// For Mul by ones or Add of zeros: the index of the operand that passes through.
std::optional<std::size_t> neutral_operand(const pass_context& ctx, const ir::node& n, double neutral) {
  if (n.inputs().size() != 2 || !n.input(0) || !n.input(1)) return std::nullopt;
  for (std::size_t c = 0; c < 2; ++c) {
    const ir::tensor* constant = ir::constant_tensor(n.input(c), ctx.ir_version());
    const ir::value* x = n.input(1 - c);
    if (!constant || !ir::is_floating(constant->dtype) || x->elem_type() != constant->dtype) continue;
    const std::optional<std::vector<double>> values = ir::constant_floats(n.input(c), ctx.ir_version());
    if (!values || !std::all_of(values->begin(), values->end(), [&](double v) { return v == neutral; })) continue;
    // x's rank must be known, and its dims static wherever the constant's dim is not 1.
    const std::optional<std::size_t> rank = ir::known_rank(x);
    if (!rank || constant->dims.size() > *rank) continue;
    const std::size_t offset = *rank - constant->dims.size();
    bool keeps_shape = true;
    for (std::size_t k = 0; k < constant->dims.size() && keeps_shape; ++k) {
      if (constant->dims[k] == 1) continue;
      const ir::dim& d = (*x->type()->dims)[offset + k];
      keeps_shape = d.is_static() && d.value() == constant->dims[k];
    }
    if (keeps_shape) return 1 - c;
  }
  return std::nullopt;
}

/// The input that `n` forwards unchanged, or nullopt when it is not a no-op.
std::optional<std::size_t> forwarded_input(const pass_context& ctx, const ir::node& n) {
  if (n.is_dead() || !n.is_onnx_domain() || n.outputs().size() != 1 || !n.output(0) || !n.input(0)) {
    return std::nullopt;
  }
  const std::string& op = n.op_type();
  bool noop = false;
  if (op == "Pad") noop = pad_is_noop(ctx, n);
  else if (op == "Cast") noop = cast_is_noop(n);
  else if (op == "Reshape") noop = reshape_is_noop(ctx, n);
  else if (op == "Transpose") noop = transpose_is_noop(n);
  else if (op == "Slice") noop = slice_is_noop(ctx, n);
  else if (op == "Concat") noop = n.inputs().size() == 1;
  else if (op == "Expand") noop = expand_is_noop(ctx, n);
  else if (op == "Mul") return neutral_operand(ctx, n, 1.0);
  else if (op == "Add") return neutral_operand(ctx, n, 0.0);
  return noop ? std::optional<std::size_t>(0) : std::nullopt;
}

/// A no-op and the input it forwards.
struct noop_match {
  ir::node* node = nullptr;
  std::size_t input = 0;
};

class noop_pattern final : public pattern<noop_match> {
 public:
  noop_pattern()
      : pattern("eliminate-noop",
                pattern_root{{"Pad", "Cast", "Reshape", "Transpose", "Slice", "Concat", "Expand", "Mul", "Add"}}) {}

  match_result<noop_match> match(const ir::graph& g, ir::node& n, const pass_context& ctx) const override {
    const std::optional<std::size_t> in = forwarded_input(ctx, n);
    if (!in) return {};
    if (ir::can_bypass(g, &n, *in) != ir::bypass_result::removed) {
      return match_result<noop_match>::declined("declined-output-name");
    }
    return noop_match{&n, *in};
  }

  std::int64_t rewrite(ir::graph& g, const noop_match& m, pass_context& ctx) const override {
    ir::bypass(g, m.node, m.input);
    ctx.count("noops-removed");
    return 1;
  }
};

}  // namespace

eliminate_noop::eliminate_noop() : pattern_pass(make_patterns<noop_pattern>()) {}

}  // namespace inferopt
