#include "int8_weights.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "inferopt/core/error.hpp"
#include "inferopt/quant/quant_params.hpp"

namespace inferopt::quant::detail {

/// -128 is left out so that negating stays in range and the grid is symmetric around zero,
/// as TensorRT requires of weights.
int8_weight quantize_int8_weight(ir::value* w, const std::vector<double>& values, std::int64_t axis, int largest_code) {
  // NaN or infinity has no int8 code; a weight holding one is a broken model, not ours to round.
  if (!std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
    throw error(errc::invalid_model, "weight '" + w->name() + "' holds NaN or infinity and cannot be quantized");
  }
  int8_weight e;
  e.weight = w;
  e.axis = axis;
  e.dims = w->initializer()->dims;
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = static_cast<std::int64_t>(values.size());
  if (axis != per_tensor_axis) {
    const auto a = static_cast<std::size_t>(axis);
    channels = e.dims[a];
    outer = ir::tensor::element_count(std::span(e.dims).first(a));
    inner = ir::tensor::element_count(std::span(e.dims).subspan(a + 1));
  }
  const auto at = [&](std::int64_t o, std::int64_t c, std::int64_t i) {
    return static_cast<std::size_t>((o * channels + c) * inner + i);
  };
  std::vector<double> amax(static_cast<std::size_t>(channels), 0.0);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c = 0; c < channels; ++c) {
      double& m = amax[static_cast<std::size_t>(c)];
      for (std::int64_t i = 0; i < inner; ++i) m = std::max(m, std::abs(values[at(o, c, i)]));
    }
  }
  for (double m : amax) e.scales.push_back(symmetric_int8_scale(tensor_range{-m, m}, largest_code));
  e.values.resize(values.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const double s = e.scales[static_cast<std::size_t>(c)];
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::size_t k = at(o, c, i);
        e.values[k] = static_cast<std::int8_t>(std::clamp(std::nearbyint(values[k] / s), -double(largest_code), double(largest_code)));
      }
    }
  }
  return e;
}

bool excluded(const ir::node& n, const std::vector<std::string>& nodes, const std::vector<std::string>& op_types) {
  return std::find(nodes.begin(), nodes.end(), n.name()) != nodes.end() ||
         std::find(op_types.begin(), op_types.end(), n.op_type()) != op_types.end();
}

void erase_unread_initializers(ir::graph& g, const std::vector<ir::value*>& replaced) {
  for (ir::value* v : replaced) {
    if (!v->is_dead() && v->is_initializer() && !v->is_graph_input() && !v->is_graph_output() && !v->has_uses()) {
      g.erase_value(v);
    }
  }
}

}  // namespace inferopt::quant::detail
