#include "inferopt/ir/matrix_operands.hpp"

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt::ir {

bool is_matrix_transpose(const node* n) {
  if (!n || n->is_dead() || !n->is("Transpose") || n->inputs().size() != 1 || !n->input(0) || !n->output(0)) {
    return false;
  }
  if (const attribute* perm = n->find_attribute("perm")) {
    return perm->kind == attribute_kind::ints && perm->ints == std::vector<std::int64_t>{1, 0};
  }
  return known_rank(n->input(0)) == std::size_t{2};  // no perm: the axes are reversed
}

std::optional<std::vector<double>> per_column_constant(const value* c, std::int64_t columns,
                                                       std::optional<std::size_t> output_rank, std::int64_t ir_version) {
  const tensor* t = constant_tensor(c, ir_version);
  if (!t || !is_floating(t->dtype) || columns <= 0) return std::nullopt;
  const std::vector<std::int64_t>& dims = t->dims;
  if (dims.size() > (output_rank ? *output_rank : std::size_t{1})) return std::nullopt;
  for (std::size_t k = 0; k + 1 < dims.size(); ++k) {
    if (dims[k] != 1) return std::nullopt;
  }
  const std::int64_t last = dims.empty() ? 1 : dims.back();
  if (last != 1 && last != columns) return std::nullopt;
  std::optional<std::vector<double>> values = constant_floats(c, ir_version);
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

}  // namespace inferopt::ir
