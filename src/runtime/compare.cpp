#include "inferopt/runtime/compare.hpp"

#include <cmath>

namespace inferopt::runtime {
namespace {
bool is_floating(data_type t) {
  return t == data_type::float32 || t == data_type::float64 || t == data_type::float16 || t == data_type::bfloat16;
}
}  // namespace

output_difference compare_tensor(const std::string& name, const tensor& a, const tensor& b, double rtol, double atol) {
  output_difference d;
  d.name = name;
  if (a.dtype() != b.dtype()) {
    d.within = false;
    d.problem = "types differ: " + std::string(ir::to_string(a.dtype())) + " vs " + std::string(ir::to_string(b.dtype()));
    return d;
  }
  if (a.shape() != b.shape()) {
    d.within = false;
    d.problem = "shapes differ: " + to_string(a.shape()) + " vs " + to_string(b.shape());
    return d;
  }
  if (is_floating(a.dtype())) {
    const auto x = a.to_float();
    const auto y = b.to_float();
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (std::isnan(x[k]) && std::isnan(y[k])) continue;
      if (std::isinf(x[k]) && x[k] == y[k]) continue;
      const double diff = std::fabs(static_cast<double>(x[k]) - y[k]);
      if (!std::isfinite(diff)) {
        d.max_abs = d.max_rel = INFINITY;
        d.within = false;
        continue;
      }
      d.max_abs = std::max(d.max_abs, diff);
      d.max_rel = std::max(d.max_rel, diff / std::max(std::fabs(static_cast<double>(y[k])), 1e-12));
      if (diff > atol + rtol * std::fabs(static_cast<double>(y[k]))) d.within = false;
    }
    return d;
  }
  const auto x = a.to_int64();
  const auto y = b.to_int64();
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double diff = std::fabs(static_cast<double>(x[k] - y[k]));
    d.max_abs = std::max(d.max_abs, diff);
    d.max_rel = std::max(d.max_rel, diff / std::max(std::fabs(static_cast<double>(y[k])), 1.0));
    if (diff != 0) d.within = false;
  }
  return d;
}

std::vector<output_difference> compare_outputs(const session& a, const tensor_map& out_a, const session& b,
                                               const tensor_map& out_b, double rtol, double atol) {
  std::vector<output_difference> diffs;
  for (std::size_t k = 0; k < a.outputs().size(); ++k) {
    const std::string& name = a.outputs()[k].name;
    auto other = out_b.find(name);
    if (other == out_b.end() && k < b.outputs().size()) other = out_b.find(b.outputs()[k].name);
    if (other == out_b.end()) {
      output_difference d;
      d.name = name;
      d.within = false;
      d.problem = "missing from the second model";
      diffs.push_back(d);
      continue;
    }
    diffs.push_back(compare_tensor(name, out_a.at(name), other->second, rtol, atol));
  }
  return diffs;
}

}  // namespace inferopt::runtime
