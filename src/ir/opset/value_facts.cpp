#include "value_facts.hpp"

#include "inferopt/ir/shapes.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/shape_inference.hpp"

namespace inferopt::ir::opset {

value_facts::value_facts(const model& m) {
  model copy = m.clone();
  try {
    if (!infer_shapes(copy).ran) return;
  } catch (const error&) {
    return;  // a model whose declared types contradict its nodes: only what it records counts
  }
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
  if (!t || !t->dims) return std::nullopt;
  return t->dims->size();
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
