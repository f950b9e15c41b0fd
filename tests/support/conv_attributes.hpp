#pragma once
// The attributes of a square 2-D Conv, for tests that build convolutions of many forms.

#include <cstdint>
#include <vector>

#include "inferopt/ir/attribute.hpp"

namespace inferopt::test {

/// kernel_shape k x k, strides, the same padding on every side, dilations and group.
inline std::vector<ir::attribute> square_conv_attributes(std::int64_t k, std::int64_t stride, std::int64_t pad,
                                                         std::int64_t dilation, std::int64_t group) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", {k, k}));
  attrs.push_back(ir::attribute::make_ints("strides", {stride, stride}));
  attrs.push_back(ir::attribute::make_ints("pads", {pad, pad, pad, pad}));
  attrs.push_back(ir::attribute::make_ints("dilations", {dilation, dilation}));
  attrs.push_back(ir::attribute::make_int("group", group));
  return attrs;
}

}  // namespace inferopt::test
