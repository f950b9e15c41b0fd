#include "inferopt/quant/quant_params.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

void check_range(const tensor_range& r) {
  if (!std::isfinite(r.min) || !std::isfinite(r.max) || r.min > r.max) {
    throw error(errc::invalid_argument,
                "range [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "] is not a finite interval");
  }
}

/// A double scale rounded to float; a width that rounds to 0 (or denormal) falls back to 1.
float positive_scale(double scale) {
  const float s = static_cast<float>(scale);
  return std::isnormal(s) ? s : 1.0f;
}

}  // namespace

std::string_view to_string(activation_scheme s) noexcept {
  switch (s) {
    case activation_scheme::int8_symmetric: return "int8-symmetric";
    case activation_scheme::uint8_asymmetric: return "uint8-asymmetric";
  }
  return "unknown";
}

float symmetric_int8_scale(const tensor_range& r, int largest_code) {
  check_range(r);
  return positive_scale(std::max(std::abs(r.min), std::abs(r.max)) / largest_code);
}

quant_params activation_params(const tensor_range& r, activation_scheme scheme) {
  if (scheme == activation_scheme::int8_symmetric) return {symmetric_int8_scale(r), 0, ir::data_type::int8};
  check_range(r);
  // Zero must be exactly representable: padding and ReLU produce exact zeros.
  const double lo = std::min(r.min, 0.0);
  const double hi = std::max(r.max, 0.0);
  const float scale = positive_scale((hi - lo) / 255.0);
  const double zero = std::nearbyint(-lo / static_cast<double>(scale));
  return {scale, static_cast<std::int32_t>(std::clamp(zero, 0.0, 255.0)), ir::data_type::uint8};
}

}  // namespace inferopt::quant
