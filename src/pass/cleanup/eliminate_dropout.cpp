#include "inferopt/pass/cleanup/eliminate_dropout.hpp"

#include <algorithm>

#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

/// The constant tensor behind a value: an initializer nobody can override, or a Constant
/// node's `value` attribute.
const ir::tensor* constant_of(const ir::value* v, const pass_context& ctx) {
  if (ctx.is_constant(*v)) return v->initializer();
  const ir::node* p = v->producer();
  if (p && p->is("Constant")) {
    const ir::attribute* a = p->find_attribute("value");
    if (a && a->kind == ir::attribute_kind::t && !a->tensors.empty()) return &a->tensors.front();
  }
  return nullptr;
}

bool is_constant_false(const ir::value* v, const pass_context& ctx) {
  const ir::tensor* t = constant_of(v, ctx);
  if (!t || t->dtype != ir::data_type::boolean || t->element_count() != 1 || !t->has_data()) return false;
  return (*t->bytes)[0] == 0;
}

enum class verdict { removable, mask_used, training_mode };

verdict classify(const ir::node& n, std::int64_t opset, const pass_context& ctx) {
  if (ir::value* mask = n.output(1); mask && (mask->has_uses() || mask->is_graph_output())) return verdict::mask_used;
  if (opset < 7) {
    const bool is_test = n.attr_int("is_test", 0) != 0;
    const bool no_drop = n.attr_float("ratio", 0.5f) == 0.0f;
    return is_test || no_drop ? verdict::removable : verdict::training_mode;
  }
  if (opset < 12) return verdict::removable;
  const ir::value* training = n.input(2);
  return !training || is_constant_false(training, ctx) ? verdict::removable : verdict::training_mode;
}

}  // namespace

bool eliminate_dropout::run(ir::graph& g, pass_context& ctx) {
  std::int64_t removed = 0;
  const std::int64_t opset = ctx.onnx_opset();
  for (ir::node* n : g.node_list()) {
    if (n->is_dead() || !n->is("Dropout") || !n->input(0) || !n->output(0)) continue;
    switch (classify(*n, opset, ctx)) {
      case verdict::mask_used: ctx.count("declined-mask-used"); continue;
      case verdict::training_mode: ctx.count("declined-training-mode"); continue;
      case verdict::removable: break;
    }
    if (ir::bypass(g, n) == ir::bypass_result::removed) {
      ++removed;
    } else {
      ctx.count("declined-output-name");
    }
  }
  ctx.rewrote(removed);
  ctx.count("dropouts-removed", removed);
  return removed > 0;
}

}  // namespace inferopt
