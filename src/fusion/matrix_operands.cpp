#include "inferopt/fusion/detail/matrix_operands.hpp"

#include "inferopt/fusion/detail/constant_tensor.hpp"

namespace inferopt::detail {

std::optional<std::vector<std::int64_t>> static_dims(const pass_context& ctx, const ir::value* v) {
  if (const ir::tensor* t = constant_tensor(ctx, v)) return t->dims;
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->has_static_shape()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const ir::dim& d : *v->type()->dims) out.push_back(d.value());
  return out;
}

std::optional<std::size_t> known_rank(const pass_context& ctx, const ir::value* v) {
  if (const ir::tensor* t = constant_tensor(ctx, v)) return t->dims.size();
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->dims) return std::nullopt;
  return v->type()->dims->size();
}

std::optional<std::int64_t> static_dim(const pass_context& ctx, const ir::value* v, std::size_t axis) {
  if (const ir::tensor* t = constant_tensor(ctx, v)) {
    return axis < t->dims.size() ? std::optional(t->dims[axis]) : std::nullopt;
  }
  if (!v || !v->type() || !v->type()->is_tensor || !v->type()->dims) return std::nullopt;
  const ir::shape& s = *v->type()->dims;
  if (axis >= s.size() || !s[axis].is_static()) return std::nullopt;
  return s[axis].value();
}

ir::data_type element_type(const pass_context& ctx, const ir::value* v) {
  if (const ir::tensor* t = constant_tensor(ctx, v)) return t->dtype;
  return v ? v->elem_type() : ir::data_type::undefined;
}

bool same_floating_type(const pass_context& ctx, std::initializer_list<const ir::value*> operands) {
  ir::data_type seen = ir::data_type::undefined;
  for (const ir::value* v : operands) {
    if (!v) continue;
    const ir::data_type t = element_type(ctx, v);
    if (t == ir::data_type::undefined) continue;
    if (seen != ir::data_type::undefined && t != seen) return false;
    seen = t;
  }
  return is_floating(seen);
}

bool is_matrix_transpose(const pass_context& ctx, const ir::node* n) {
  if (!n || n->is_dead() || !n->is("Transpose") || n->inputs().size() != 1 || !n->input(0) || !n->output(0)) {
    return false;
  }
  if (const ir::attribute* perm = n->find_attribute("perm")) {
    return perm->kind == ir::attribute_kind::ints && perm->ints == std::vector<std::int64_t>{1, 0};
  }
  return known_rank(ctx, n->input(0)) == std::size_t{2};  // no perm: the axes are reversed
}

std::optional<std::vector<double>> per_column_constant(const pass_context& ctx, const ir::value* c,
                                                       std::int64_t columns, std::optional<std::size_t> output_rank) {
  const ir::tensor* t = constant_tensor(ctx, c);
  if (!t || !is_floating(t->dtype) || columns <= 0) return std::nullopt;
  const std::vector<std::int64_t>& dims = t->dims;
  if (dims.size() > (output_rank ? *output_rank : std::size_t{1})) return std::nullopt;
  for (std::size_t k = 0; k + 1 < dims.size(); ++k) {
    if (dims[k] != 1) return std::nullopt;
  }
  const std::int64_t last = dims.empty() ? 1 : dims.back();
  if (last != 1 && last != columns) return std::nullopt;
  std::optional<std::vector<double>> values = constant_floats(ctx, c);
  if (!values || static_cast<std::int64_t>(values->size()) != last) return std::nullopt;
  if (last == 1) return std::vector<double>(static_cast<std::size_t>(columns), values->front());
  return values;
}

bool broadcasts_to_matrix(const std::vector<std::int64_t>& dims, std::optional<std::int64_t> m,
                          std::optional<std::int64_t> n) {
  if (dims.size() > 2) return false;
  const auto fits = [](std::int64_t d, std::optional<std::int64_t> out) { return d == 1 || (out && d == *out); };
  if (!dims.empty() && !fits(dims.back(), n)) return false;
  return dims.size() < 2 || fits(dims.front(), m);
}

}  // namespace inferopt::detail
