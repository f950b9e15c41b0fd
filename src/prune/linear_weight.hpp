#pragma once
// The parameters of a MatMul or Gemm layer as the [K, N] matrix its input rows multiply, and
// the bias beside it: read, and written back in the layout the node stores.

#include <cstdint>
#include <optional>
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
