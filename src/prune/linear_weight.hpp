#pragma once
// The weight of a MatMul or Gemm reader as the [K, N] matrix its input rows multiply.

#include <cstdint>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/node.hpp"

namespace inferopt::prune {

/// The reader's weight as [K, N] row-major.
inline std::vector<float> weight_rows(const ir::node& n, bool transposed, std::int64_t ir_version, std::int64_t& outputs) {
  const ir::tensor* w = ir::constant_tensor(n.input(1), ir_version);
  const std::vector<double> stored = *ir::constant_floats(n.input(1), ir_version);
  std::vector<float> values(stored.begin(), stored.end());
  if (!transposed) {
    outputs = w->dims[1];
    return values;
  }
  const std::int64_t rows = w->dims[1];
  outputs = w->dims[0];
  std::vector<float> out(values.size());
  for (std::int64_t o = 0; o < outputs; ++o) {
    for (std::int64_t k = 0; k < rows; ++k) out[static_cast<std::size_t>(k * outputs + o)] = values[static_cast<std::size_t>(o * rows + k)];
  }
  return out;
}

}  // namespace inferopt::prune
