#pragma once
/// The calibrated range of a tensor: what calibration produces and quantization consumes.

#include <map>
#include <string>

namespace inferopt::quant {

/// Real values the quantized tensor must represent, [min, max]. Symmetric quantization uses
/// max(|min|, |max|); asymmetric uses both ends (always widened to include 0).
struct tensor_range {
  double min = 0.0;
  double max = 0.0;
};

/// Ranges by tensor (value) name.
using range_table = std::map<std::string, tensor_range, std::less<>>;

}  // namespace inferopt::quant
