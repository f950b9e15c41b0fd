#include "norm_statistics.hpp"

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::quant::detail {

namespace {

/// The one value of a constant exponent: an initializer or a Constant node's tensor.
std::optional<double> scalar_constant(const ir::value* v, std::int64_t ir_version) {
  std::optional<std::vector<double>> values = ir::constant_floats(v, ir_version);
  if (!values && v->producer() && v->producer()->is("Constant")) {
    const ir::attribute* a = v->producer()->find_attribute("value");
    if (a && a->kind == ir::attribute_kind::t && !a->tensors.empty()) values = ir::floats_of(a->tensors.front());
  }
  if (!values || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

bool squares(const ir::node& n, std::int64_t ir_version) {
  if (n.is("ReduceSumSquare") || n.is("ReduceL2")) return true;
  if (n.is("Mul")) return n.inputs().size() == 2 && n.input(0) && n.input(0) == n.input(1);
  if (!n.is("Pow") || n.inputs().size() != 2 || !n.input(1)) return false;
  return scalar_constant(n.input(1), ir_version) == 2.0;
}

}  // namespace

std::set<const ir::node*> squared_statistics(const ir::graph& g, std::int64_t ir_version) {
  std::set<const ir::node*> kept;
  for (const ir::node* n : g.nodes()) {
    if (!squares(*n, ir_version) || !n->output(0)) continue;
    kept.insert(n);
    for (const ir::node* next = ir::sole_user(n->output(0)); next && next->output(0);
         next = ir::sole_user(next->output(0))) {
      if (!next->is("ReduceMean") && !next->is("ReduceSum") && !next->is("Add") && !next->is("Sqrt")) break;
      kept.insert(next);
      if (next->is("Sqrt")) break;
    }
  }
  return kept;
}

}  // namespace inferopt::quant::detail
