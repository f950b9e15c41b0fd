#pragma once
// The parameters of a MatMul or Gemm layer as the [K, N] matrix its input rows multiply, and
// the bias beside it: read, and written back in the layout the node stores.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/node.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt::prune {

/// Whether the layer stores its weight as [N, K] (Gemm with transB).
inline bool stores_transposed(const ir::node& n) { return n.is("Gemm") && n.attr_int("transB", 0) != 0; }

/// `values` [rows, cols] row-major, transposed to [cols, rows].
inline std::vector<float> transposed_copy(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) out[static_cast<std::size_t>(c * rows + r)] = values[static_cast<std::size_t>(r * cols + c)];
  }
  return out;
}

/// The reader's weight as [K, N] row-major.
inline std::vector<float> weight_rows(const ir::node& n, bool transposed, std::int64_t ir_version, std::int64_t& outputs) {
  const ir::tensor* w = ir::constant_tensor(n.input(1), ir_version);
  const std::vector<double> stored = *ir::constant_floats(n.input(1), ir_version);
  std::vector<float> values(stored.begin(), stored.end());
  outputs = transposed ? w->dims[0] : w->dims[1];
  return transposed ? transposed_copy(values, w->dims[0], w->dims[1]) : values;
}

/// Replaces the layer's weight by `weight` ([K, N] row-major), stored the way the node reads it.
inline void store_weight_rows(ir::graph& g, ir::node& n, bool transposed, const std::vector<float>& weight, std::int64_t outputs,
                              std::string_view suffix) {
  const auto rows = static_cast<std::int64_t>(weight.size()) / outputs;
  const std::vector<std::int64_t> dims = transposed ? std::vector<std::int64_t>{outputs, rows} : std::vector<std::int64_t>{rows, outputs};
  expects(ir::static_dims(n.input(1)) == dims, "a rewritten weight keeps the node's weight shape");
  const std::vector<float> stored = transposed ? transposed_copy(weight, rows, outputs) : weight;
  ir::set_constant_input(g, &n, 1, ir::tensor::from_values<float>("", dims, stored), n.input(1)->name() + std::string(suffix));
}

/// Where a linear layer's bias lives: a Gemm's C, or the constant [N] an Add adds after a MatMul.
struct bias_site {
  ir::node* owner = nullptr;
  std::size_t input = 0;
};

inline std::optional<bias_site> find_bias(ir::node& n, std::int64_t outputs, std::int64_t ir_version) {
  const auto is_bias = [&](const ir::value* v) {
    const ir::tensor* t = ir::constant_tensor(v, ir_version);
    return t && t->dtype == ir::data_type::float32 && ir::tensor::element_count(t->dims) == outputs && !t->dims.empty() &&
           t->dims.back() == outputs;
  };
  if (n.is("Gemm")) return is_bias(n.input(2)) ? std::optional<bias_site>(bias_site{&n, 2}) : std::nullopt;
  ir::node* add = ir::sole_user(n.output(0));
  if (!add || !add->is("Add") || add->inputs().size() != 2) return std::nullopt;
  const std::size_t other = add->input(0) == n.output(0) ? 1 : 0;
  return is_bias(add->input(other)) ? std::optional<bias_site>(bias_site{add, other}) : std::nullopt;
}

/// Whether `v` is computed from a graph input, not from constants alone (a bias an exporter
/// shares through an Identity is not).
inline bool computed_from_data(const ir::value* v, std::int64_t ir_version) {
  std::vector<const ir::value*> todo{v};
  std::set<const ir::value*> seen;
  while (!todo.empty()) {
    const ir::value* x = todo.back();
    todo.pop_back();
    if (!x || !seen.insert(x).second || ir::is_constant(*x, ir_version)) continue;
    if (x->is_graph_input()) return true;
    if (const ir::node* p = x->producer()) todo.insert(todo.end(), p->inputs().begin(), p->inputs().end());
  }
  return false;
}

/// The value a layer's output (after its bias, which `bias_owner` adds, when not null) is added
/// to, when that sum is its only use: the residual stream, whose error in a changed model a
/// refit can make up for too. Null otherwise.
inline const ir::value* residual_addend(const ir::node& layer, const ir::node* bias_owner, std::int64_t ir_version) {
  const ir::value* y = (bias_owner ? bias_owner : &layer)->output(0);
  if (!y || y->uses().size() != 1) return nullptr;
  const ir::use& u = y->uses().front();
  if (!u.user->is("Add") || u.user->inputs().size() != 2) return nullptr;
  const ir::value* other = u.user->input(1 - u.input_index);
  return other && computed_from_data(other, ir_version) ? other : nullptr;
}

/// The bias's values, as floats.
inline std::vector<float> bias_values(const bias_site& b, std::int64_t ir_version) {
  const std::vector<double> stored = *ir::constant_floats(b.owner->input(b.input), ir_version);
  return {stored.begin(), stored.end()};
}

/// Replaces the bias by `values`, in its own shape.
inline void store_bias(ir::graph& g, const bias_site& b, const std::vector<float>& values, std::int64_t ir_version, std::string_view suffix) {
  const ir::tensor* old = ir::constant_tensor(b.owner->input(b.input), ir_version);
  ir::set_constant_input(g, b.owner, b.input, ir::tensor::from_values<float>("", old->dims, values),
                         b.owner->input(b.input)->name() + std::string(suffix));
}

}  // namespace inferopt::prune
