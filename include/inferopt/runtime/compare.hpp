#pragma once
/// Comparing the outputs of two runs: the numeric check every optimization is held to.

#include <string>
#include <vector>

#include "inferopt/runtime/session.hpp"

namespace inferopt::runtime {

struct output_difference {
  std::string name;
  double max_abs = 0.0;   ///< max |a - b|
  double max_rel = 0.0;   ///< max |a - b| / max(|b|, tiny)
  bool within = true;     ///< every element satisfies |a - b| <= atol + rtol * |b|
  std::string problem;    ///< set when types or shapes differ (then `within` is false)
};

/// Compares outputs by name (falling back to position when the names differ). NaN equals
/// NaN; integer and bool tensors must match exactly.
[[nodiscard]] std::vector<output_difference> compare_outputs(const session& a, const tensor_map& out_a,
                                                             const session& b, const tensor_map& out_b, double rtol,
                                                             double atol);

/// Element-wise comparison of two tensors.
[[nodiscard]] output_difference compare_tensor(const std::string& name, const tensor& a, const tensor& b, double rtol,
                                               double atol);

}  // namespace inferopt::runtime
