#pragma once
// Comparing executor outputs with expected tensors, ONNX-style: |got - want| <= atol + rtol*|want|
// for floating types (NaN equals NaN), exact equality otherwise.

#include <cmath>
#include <sstream>
#include <string>

#include "inferopt/runtime/tensor.hpp"

namespace inferopt::test {

/// Empty when equal within tolerance, else a description of the first mismatch.
inline std::string compare_tensors(const runtime::tensor& got, const runtime::tensor& want, double rtol, double atol) {
  std::ostringstream why;
  if (got.dtype() != want.dtype()) {
    why << "type " << ir::to_string(got.dtype()) << " != expected " << ir::to_string(want.dtype());
    return why.str();
  }
  if (got.shape() != want.shape()) {
    why << "shape " << runtime::to_string(got.shape()) << " != expected " << runtime::to_string(want.shape());
    return why.str();
  }
  const bool floating = want.dtype() == ir::data_type::float32 || want.dtype() == ir::data_type::float64 ||
                        want.dtype() == ir::data_type::float16 || want.dtype() == ir::data_type::bfloat16;
  if (floating) {
    const auto g = got.to_float();
    const auto w = want.to_float();
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (std::isnan(w[k]) && std::isnan(g[k])) continue;
      if (std::isinf(w[k]) && g[k] == w[k]) continue;
      const double diff = std::fabs(static_cast<double>(g[k]) - w[k]);
      if (!(diff <= atol + rtol * std::fabs(static_cast<double>(w[k])))) {
        why << "element " << k << ": " << g[k] << " vs expected " << w[k];
        return why.str();
      }
    }
    return {};
  }
  if (got.byte_size() != want.byte_size() ||
      (got.byte_size() && std::memcmp(got.raw(), want.raw(), got.byte_size()) != 0)) {
    const auto g = got.to_int64();
    const auto w = want.to_int64();
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (g[k] != w[k]) {
        why << "element " << k << ": " << g[k] << " vs expected " << w[k];
        return why.str();
      }
    }
    return "bytes differ";
  }
  return {};
}

}  // namespace inferopt::test
