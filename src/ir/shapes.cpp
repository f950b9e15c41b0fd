#include "inferopt/ir/shapes.hpp"

#include <algorithm>

#include "inferopt/ir/constants.hpp"

namespace inferopt::ir {
namespace {

/// The tensor type of `v` when it has one with a known rank; null otherwise.
const shape* typed_dims(const value* v) {
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->dims) return nullptr;
  return &*v->type()->dims;
}

}  // namespace

std::optional<std::vector<std::int64_t>> static_dims(const value* v) {
  if (!v) return std::nullopt;
  if (v->type() && v->type()->is_tensor && v->type()->has_static_shape()) {
    std::vector<std::int64_t> out;
    for (const dim& d : *v->type()->dims) out.push_back(d.value());
    return out;
  }
  if (const tensor* t = v->initializer()) return t->dims;
  return std::nullopt;
}

std::optional<std::size_t> known_rank(const value* v) {
  if (const shape* s = typed_dims(v)) return s->size();
  if (const tensor* t = v ? v->initializer() : nullptr) return t->dims.size();
  return std::nullopt;
}

std::optional<std::int64_t> static_dim(const value* v, std::size_t axis) {
  if (const shape* s = typed_dims(v); s && axis < s->size() && (*s)[axis].is_static()) return (*s)[axis].value();
  if (const tensor* t = v ? v->initializer() : nullptr; t && axis < t->dims.size()) return t->dims[axis];
  return std::nullopt;
}

data_type element_type(const value* v) {
  if (!v) return data_type::undefined;
  if (v->elem_type() != data_type::undefined) return v->elem_type();
  return v->initializer() ? v->initializer()->dtype : data_type::undefined;
}

bool same_floating_type(std::initializer_list<const value*> operands) {
  data_type seen = data_type::undefined;
  for (const value* v : operands) {
    if (!v) continue;
    const data_type t = element_type(v);
    if (t == data_type::undefined) continue;
    if (seen != data_type::undefined && t != seen) return false;
    seen = t;
  }
  return is_floating(seen);
}

std::optional<int_list> int_list_operand(const node& n, std::string_view attribute, std::size_t input,
                                         bool from_attribute, std::int64_t ir_version) {
  if (from_attribute) {
    const ir::attribute* a = n.find_attribute(attribute);
    if (!a) return int_list{};
    if (a->kind != attribute_kind::ints) return std::nullopt;
    return int_list{true, a->ints};
  }
  const value* v = n.input(input);
  if (!v) return int_list{};
  std::optional<std::vector<std::int64_t>> values = constant_ints(v, ir_version);
  if (!values) return std::nullopt;
  return int_list{true, std::move(*values)};
}

std::optional<std::vector<std::int64_t>> normalized_axes(std::vector<std::int64_t> axes, std::int64_t rank) {
  for (std::int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

}  // namespace inferopt::ir
