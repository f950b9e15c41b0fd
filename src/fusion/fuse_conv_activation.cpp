#include "inferopt/fusion/fuse_conv_activation.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

constexpr std::array<std::string_view, 6> conv_attributes{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};

/// What `match` found: the Conv, the Add whose other operand becomes Z (or none) and the
/// activation (or none; at least one of the two is present).
struct conv_match {
  ir::node* conv = nullptr;
  ir::node* add = nullptr;
  std::size_t add_slot = 0;  // the Add input that reads the Conv output
  ir::value* residual = nullptr;
  ir::node* act = nullptr;
  fusion::detail::fused_activation activation;
};

match_result<conv_match> decline(std::string_view why) { return match_result<conv_match>::declined(why); }

/// The element type a node's output has, falling back to its inputs' (Conv's X and W share
/// one type; W is usually a constant initializer) when no type inference has run.
ir::data_type float_type_of(const pass_context& ctx, const ir::node* n) {
  for (const ir::value* v : {n->output(0), n->input(0), n->input(1)}) {
    if (const ir::data_type t = ir::element_type(v); t != ir::data_type::undefined) return t;
  }
  return ir::data_type::undefined;
}

/// Whether `a` and `b` are known to have one shape: the same rank, and per dim the same
/// number or the same symbolic name (one name stands for one size in a model, so a symbolic
/// batch dim does not stop the fusion). Unknown dims never match.
bool same_known_shape(const ir::value* a, const ir::value* b) {
  if (!a->type() || !b->type() || !a->type()->dims || !b->type()->dims) return false;
  const ir::shape& x = *a->type()->dims;
  const ir::shape& y = *b->type()->dims;
  if (x.size() != y.size()) return false;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const bool known = x[k].is_static() || (x[k].is_symbolic() && !x[k].param().empty());
    if (!known || x[k].size != y[k].size) return false;
  }
  return true;
}

/// The reader of `v` when it is `v`'s only reader and reads it as input 0.
ir::node* sole_first_input_user(const ir::value* v) {
  ir::node* user = ir::sole_user(v);
  return user && user->input(0) == v ? user : nullptr;
}

match_result<conv_match> find_match(const ir::graph& g, const pass_context& ctx, ir::node* conv) {
  // 1. a plain Conv with X, W, [B] and Conv's own attributes
  if (!conv->is("Conv") || conv->outputs().size() != 1 || !conv->output(0) || conv->inputs().size() < 2 ||
      conv->inputs().size() > 3 || !conv->input(0) || !conv->input(1)) {
    return {};
  }
  for (const ir::attribute& a : conv->attributes()) {
    if (std::find(conv_attributes.begin(), conv_attributes.end(), a.name) == conv_attributes.end()) {
      return decline("declined-attribute");
    }
  }
  // 2. float32 only, and not inside a QDQ group: int8 kernels (onnxruntime's QLinearConv, the
  // executor's) take DequantizeLinear -> Conv -> [Relu] -> QuantizeLinear whole, not FusedConv
  if (float_type_of(ctx, conv) != ir::data_type::float32) return decline("declined-type");
  if (const ir::node* p = conv->input(0)->producer(); p && p->is("DequantizeLinear")) return decline("declined-qdq-group");
  // 3. com.microsoft version 1 can be imported
  if (!fusion::detail::microsoft_opset_usable(ctx)) return decline("declined-opset");
  // 4. the Conv output feeds one node only
  ir::value* out = conv->output(0);
  ir::node* next = ir::sole_user(out);
  if (!next) return decline("declined-users");

  conv_match m;
  m.conv = conv;
  // 5. a residual Add of the same shape
  if ((next->is("Add") || next->is("Sum")) && next->inputs().size() == 2 && next->outputs().size() == 1 && next->output(0) &&
      next->input(0) && next->input(1)) {
    m.add = next;
    m.add_slot = next->input(0) == out ? 0 : 1;
    m.residual = next->input(1 - m.add_slot);
    if (m.residual->elem_type() != ir::data_type::float32 || !same_known_shape(m.residual, out)) {
      return decline("declined-residual-shape");
    }
    next = sole_first_input_user(next->output(0));
  } else if (next->input(0) != out) {
    return decline("declined-no-activation");
  }
  // 6. an activation FusedConv accepts (optional after an Add)
  if (next) {
    if (std::optional<fusion::detail::fused_activation> a = fusion::detail::match_fused_activation(ctx, next)) {
      m.act = next;
      m.activation = std::move(*a);
    }
  }
  if (!m.add && !m.act) return decline("declined-no-activation");
  // 7. the last absorbed node's output name can move to the fused node
  const ir::bypass_result last = m.act ? ir::can_bypass(g, m.act, 0, 0) : ir::can_bypass(g, m.add, m.add_slot, 0);
  if (last != ir::bypass_result::removed) return decline("declined-output-name");
  return std::move(m);
}

void apply_match(ir::graph& g, pass_context& ctx, const conv_match& m) {
  ir::node* conv = m.conv;
  if (m.add) {
    // Z may be computed between the Conv and the Add; the Add's place has it ready. The Conv's
    // own inputs come before its old place, and its only reader is the Add.
    g.move_before(conv, m.add);
  }
  // Every check was made in match: these bypasses cannot decline.
  if (m.act) ir::bypass(g, m.act, 0, 0);
  if (m.add) ir::bypass(g, m.add, m.add_slot, 0);
  conv->set_op_type("FusedConv");
  conv->set_domain(fusion::detail::microsoft_domain);
  if (m.act) {
    conv->set_attribute(ir::attribute::make_string("activation", m.activation.name));
    if (!m.activation.params.empty()) {
      conv->set_attribute(ir::attribute::make_floats("activation_params", m.activation.params));
    }
  }
  if (m.add) g.set_input(conv, 3, m.residual);
  ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class conv_activation_pattern final : public pattern<conv_match> {
 public:
  conv_activation_pattern() : pattern("fuse-conv-activation", pattern_root{{"Conv"}}) {}

  match_result<conv_match> match(const ir::graph& g, ir::node& root, const pass_context& ctx) const override {
    return find_match(g, ctx, &root);
  }

  std::int64_t rewrite(ir::graph& g, const conv_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    if (m.add) ctx.count("residuals-fused");
    if (m.act) ctx.count("activations-fused");
    return 1;
  }
};

}  // namespace

fuse_conv_activation::fuse_conv_activation() : pattern_pass(make_patterns<conv_activation_pattern>()) {}

}  // namespace inferopt
