#include "inferopt/fusion/fuse_consecutive_reshapes.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

bool is_shape_op(const ir::node* n) {
  return n && !n->is_dead() && (n->is("Reshape") || n->is("Flatten") || n->is("Squeeze") || n->is("Unsqueeze")) &&
         n->outputs().size() == 1 && n->input(0) && n->output(0);
}

/// The opset forms this graph's model uses.
struct forms {
  bool reshape_shape_attribute;  // Reshape-1..4
  bool axes_attribute;           // Squeeze/Unsqueeze before 13
  bool has_allowzero;            // Reshape-14
};

std::optional<ir::int_list> axes_of(const pass_context& ctx, const forms& f, const ir::node* n) {
  return ir::int_list_operand(*n, "axes", 1, f.axes_attribute, ctx.ir_version());
}

/// Reshape's target, or nullopt when it is missing or not constant.
std::optional<std::vector<std::int64_t>> target_of(const pass_context& ctx, const forms& f, const ir::node* n) {
  std::optional<ir::int_list> t = ir::int_list_operand(*n, "shape", 1, f.reshape_shape_attribute, ctx.ir_version());
  if (!t || !t->present) return std::nullopt;
  return std::move(t->values);
}

bool allows_zero(const forms& f, const ir::node* n) { return f.has_allowzero && n->attr_int("allowzero", 0) != 0; }

/// Squeeze(a) -> Unsqueeze(b) or Unsqueeze(a) -> Squeeze(b) with the same axes.
bool cancels(const pass_context& ctx, const forms& f, const ir::node* first, const ir::node* second) {
  const bool squeeze_then_unsqueeze = first->is("Squeeze") && second->is("Unsqueeze");
  const bool unsqueeze_then_squeeze = first->is("Unsqueeze") && second->is("Squeeze");
  if (!squeeze_then_unsqueeze && !unsqueeze_then_squeeze) return false;
  const std::optional<ir::int_list> a = axes_of(ctx, f, first);
  const std::optional<ir::int_list> b = axes_of(ctx, f, second);
  if (!a || !b || !a->present || !b->present || a->values.size() != b->values.size()) return false;
  // Both lists count axes of the wider tensor: x for Squeeze -> Unsqueeze, y for the other.
  std::optional<std::size_t> rank = ir::known_rank(first->input(0));
  if (rank && unsqueeze_then_squeeze) *rank += a->values.size();
  const bool any_negative = std::any_of(a->values.begin(), a->values.end(), [](std::int64_t v) { return v < 0; }) ||
                            std::any_of(b->values.begin(), b->values.end(), [](std::int64_t v) { return v < 0; });
  if (any_negative && !rank) return false;
  const std::int64_t r = rank ? static_cast<std::int64_t>(*rank) : INT64_MAX;
  const std::optional<std::vector<std::int64_t>> na = ir::normalized_axes(a->values, r);
  const std::optional<std::vector<std::int64_t>> nb = ir::normalized_axes(b->values, r);
  return na && nb && *na == *nb;
}

/// B's target with every copying `0` replaced by the dim of y it copies; nullopt when one
/// cannot be known or is 0.
std::optional<std::vector<std::int64_t>> resolved_target(const pass_context& ctx, const forms& f,
                                                         const ir::node* first, const ir::node* second) {
  std::optional<std::vector<std::int64_t>> target = target_of(ctx, f, second);
  if (!target || allows_zero(f, second)) return target;
  const ir::value* y = first->output(0);
  std::optional<std::vector<std::int64_t>> first_target;
  if (first->is("Reshape")) first_target = target_of(ctx, f, first);
  for (std::size_t k = 0; k < target->size(); ++k) {
    std::int64_t& d = (*target)[k];
    if (d != 0) continue;
    if (y->type() && y->type()->dims && k < y->type()->dims->size() && (*y->type()->dims)[k].is_static()) {
      d = (*y->type()->dims)[k].value();
    } else if (first_target && k < first_target->size() && (*first_target)[k] > 0) {
      d = (*first_target)[k];  // a literal dim of A's target is y's dim
    }
    if (d == 0) return std::nullopt;
  }
  return target;
}

/// z's static shape when it has no 0 dim.
std::optional<std::vector<std::int64_t>> static_result(const ir::node* second) {
  std::optional<std::vector<std::int64_t>> dims = ir::static_dims(second->output(0));
  if (!dims || std::find(dims->begin(), dims->end(), 0) != dims->end()) return std::nullopt;
  return dims;
}

/// Turns `n` into Reshape(x, target) in the opset's form, keeping its output.
void make_reshape(ir::graph& g, const forms& f, ir::node* n, ir::value* x, const std::vector<std::int64_t>& target,
                  bool keep_attributes) {
  if (!keep_attributes) n->attributes().clear();
  n->set_op_type("Reshape");
  g.set_input(n, 0, x);
  if (f.reshape_shape_attribute) {
    n->set_attribute(ir::attribute::make_ints("shape", target));
    return;
  }
  ir::tensor t = ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(target.size())}, target);
  ir::set_constant_input(g, n, 1, std::move(t), (n->name().empty() ? std::string("reshape") : n->name()) + "_shape");
}

forms forms_of(const pass_context& ctx) {
  const std::int64_t opset = ctx.onnx_opset();
  return forms{opset < 5, opset < 13, opset >= 14};
}

/// Two shape ops in a row, and what replaces them.
struct shape_pair {
  enum class action {
    cancel,          // B undoes A: B's readers read x
    retarget,        // B becomes Reshape(x, target), keeping its attributes
    reconnect,       // B's target stays as it is; B reads x
    static_reshape,  // B becomes Reshape(x, z's static shape)
  };
  ir::node* first = nullptr;
  ir::node* second = nullptr;
  action what = action::cancel;
  std::vector<std::int64_t> target;  // retarget, static_reshape
};

class consecutive_reshapes_pattern final : public pattern<shape_pair> {
 public:
  consecutive_reshapes_pattern()
      : pattern("fuse-consecutive-reshapes", pattern_root{{"Reshape", "Flatten", "Squeeze", "Unsqueeze"}}) {}

  match_result<shape_pair> match(const ir::graph& g, ir::node& second, const pass_context& ctx) const override {
    if (!is_shape_op(&second)) return {};
    ir::node* first = second.input(0)->producer();
    if (!is_shape_op(first) || first->owner() != &g) return {};
    const forms f = forms_of(ctx);
    ir::value* x = first->input(0);
    shape_pair m{first, &second, shape_pair::action::cancel, {}};
    if (cancels(ctx, f, first, &second) && ir::can_forward_past(g, &second, x)) return m;
    if (second.is("Reshape")) {
      if (std::optional<std::vector<std::int64_t>> target = resolved_target(ctx, f, first, &second)) {
        // B keeps its attributes (allowzero) and, when no 0 was resolved, its target operand.
        const bool same = target == target_of(ctx, f, &second);
        m.what = same ? shape_pair::action::reconnect : shape_pair::action::retarget;
        m.target = std::move(*target);
        return m;
      }
    }
    std::optional<std::vector<std::int64_t>> dims = static_result(&second);
    if (!dims || (f.reshape_shape_attribute && second.inputs().size() != 1)) return {};
    m.what = shape_pair::action::static_reshape;
    m.target = std::move(*dims);
    return m;
  }

  std::int64_t rewrite(ir::graph& g, const shape_pair& m, pass_context& ctx) const override {
    const forms f = forms_of(ctx);
    ir::value* x = m.first->input(0);
    switch (m.what) {
      case shape_pair::action::cancel: ir::forward_past(g, m.second, x); break;
      case shape_pair::action::retarget: make_reshape(g, f, m.second, x, m.target, true); break;
      case shape_pair::action::reconnect: g.set_input(m.second, 0, x); break;
      case shape_pair::action::static_reshape: make_reshape(g, f, m.second, x, m.target, false); break;
    }
    ctx.count(m.what == shape_pair::action::cancel ? "shape-ops-cancelled" : "reshapes-merged");
    ir::erase_if_unread(g, m.first);
    return 1;
  }
};

}  // namespace

fuse_consecutive_reshapes::fuse_consecutive_reshapes()
    : pattern_pass(make_patterns<consecutive_reshapes_pattern>()) {}

}  // namespace inferopt
