#include "attribute_changes.hpp"

#include <algorithm>

namespace inferopt::ir::opset {
namespace {

std::string before(const step_context& ctx) { return "before opset " + std::to_string(ctx.version); }

}  // namespace

bool neutral_value::matches(const attribute& a) const {
  if (any) return true;
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    if (every_element) {
      return a.kind == attribute_kind::ints && std::all_of(a.ints.begin(), a.ints.end(), [&](std::int64_t e) { return e == *i; });
    }
    return a.kind == attribute_kind::i && a.i == *i;
  }
  if (const auto* f = std::get_if<double>(&value)) return a.kind == attribute_kind::f && a.f == static_cast<float>(*f);
  if (const auto* s = std::get_if<std::string>(&value)) return a.kind == attribute_kind::s && a.s == *s;
  return false;
}

attribute neutral_value::make(const std::string& name) const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return attribute::make_int(name, *i);
  if (const auto* f = std::get_if<double>(&value)) return attribute::make_float(name, static_cast<float>(*f));
  return attribute::make_string(name, std::get<std::string>(value));
}

std::string neutral_value::text() const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* f = std::get_if<double>(&value)) return std::to_string(*f);
  if (const auto* s = std::get_if<std::string>(&value)) return "'" + *s + "'";
  return "absent";
}

bool attribute_added::down(step_context& ctx) const {
  const attribute* a = ctx.n->find_attribute(attribute_);
  if (!a) return false;
  if (!neutral_.matches(*a)) ctx.refuse("attribute '" + attribute_ + "' has no form " + before(ctx));
  ctx.n->remove_attribute(attribute_);
  return true;
}

bool attribute_removed::up(step_context& ctx) const {
  const attribute* a = ctx.n->find_attribute(attribute_);
  if (!a) return false;
  if (!std::holds_alternative<std::monostate>(kept_.value) && !kept_.matches(*a)) {
    ctx.refuse("attribute '" + attribute_ + "' has this value only before opset " + std::to_string(ctx.version));
  }
  ctx.n->remove_attribute(attribute_);
  return true;
}

bool attribute_values_changed::check(step_context& ctx) const {
  const attribute* a = ctx.n->find_attribute(attribute_);
  if (a && a->kind == attribute_kind::s && std::find(values_.begin(), values_.end(), a->s) != values_.end()) {
    ctx.refuse(attribute_ + " '" + a->s + "' has no form " + (added_ ? before(ctx) : "from opset " + std::to_string(ctx.version)));
  }
  return false;
}

bool attribute_values_changed::up(step_context& ctx) const { return added_ ? false : check(ctx); }

bool attribute_values_changed::down(step_context& ctx) const { return added_ ? check(ctx) : false; }

bool attribute_default_changed::up(step_context& ctx) const {
  if (ctx.n->find_attribute(attribute_)) return false;
  ctx.n->set_attribute(old_default_.make(attribute_));
  return true;
}

bool attribute_default_changed::down(step_context& ctx) const {
  const attribute* a = ctx.n->find_attribute(attribute_);
  if (!a || !old_default_.matches(*a)) {
    ctx.refuse("attribute '" + attribute_ + "' other than " + old_default_.text() + " has no form " + before(ctx));
  }
  ctx.n->remove_attribute(attribute_);
  return true;
}

bool negative_axes::down(step_context& ctx) const {
  attribute* a = ctx.n->find_attribute(attribute_);
  if (!a || (a->kind != attribute_kind::i && a->kind != attribute_kind::ints)) return false;
  std::vector<std::int64_t*> axes;
  if (a->kind == attribute_kind::i) axes.push_back(&a->i);
  for (std::int64_t& v : a->ints) axes.push_back(&v);
  if (std::none_of(axes.begin(), axes.end(), [](const std::int64_t* v) { return *v < 0; })) return false;
  std::int64_t rank = ctx.rank_or_refuse(ctx.n->input(0), "a negative " + attribute_ + " " + before(ctx));
  if (ctx.n->op_type() == "Unsqueeze") rank += static_cast<std::int64_t>(a->ints.size());
  for (std::int64_t* v : axes) {
    if (*v < 0) *v += rank;
    if (*v < 0) ctx.refuse(attribute_ + " is out of range for rank " + std::to_string(rank));
  }
  return true;
}

}  // namespace inferopt::ir::opset
