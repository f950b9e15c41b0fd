#pragma once
// Symmetric int8 weights and the constants that carry them, shared by static QDQ (qdq.cpp)
// and dynamic quantization (dynamic_quantize.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/graph.hpp"

namespace inferopt::quant::detail {

/// The weight "axis" meaning one scale for the whole tensor.
inline constexpr std::int64_t per_tensor_axis = -1;

/// An int8 weight with its scales: one per index of `axis`, or one for per_tensor_axis.
struct int8_weight {
  ir::value* weight = nullptr;
  std::int64_t axis = per_tensor_axis;
  std::vector<std::int64_t> dims;
  std::vector<std::int8_t> values;
  std::vector<float> scales;

  /// The dims of the scale and zero-point tensors: [] per tensor, [channels] per axis.
  [[nodiscard]] std::vector<std::int64_t> scale_dims() const {
    return axis == per_tensor_axis ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{static_cast<std::int64_t>(scales.size())};
  }
};

/// Symmetric int8 over [-largest_code, largest_code] of the initializer `w`, whose values are
/// `values` (127 for 8-bit weights, 63 for 7-bit: largest_weight_code).
/// @throws error(errc::invalid_model) when a value is NaN or infinite.
[[nodiscard]] int8_weight quantize_int8_weight(ir::value* w, const std::vector<double>& values, std::int64_t axis,
                                               int largest_code = 127);

/// Whether `n` is named in `nodes` or its op type is in `op_types` (the quantizers' exclusions).
[[nodiscard]] bool excluded(const ir::node& n, const std::vector<std::string>& nodes, const std::vector<std::string>& op_types);

/// A new initializer of `g` named after `base` (made unique).
template <class T>
ir::value* add_constant(ir::graph& g, const std::string& base, std::vector<std::int64_t> dims, const std::vector<T>& values) {
  std::string name = g.unique_name(base);
  return g.add_initializer(name, ir::tensor::from_values<T>(name, std::move(dims), values));
}

/// Erases the initializers of `replaced` that no node reads any more (float weights that were
/// quantized); shared ones another node still reads stay.
void erase_unread_initializers(ir::graph& g, const std::vector<ir::value*>& replaced);

}  // namespace inferopt::quant::detail
