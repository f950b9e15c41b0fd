#pragma once
/// `sum-to-add`: a Sum of exactly two inputs becomes an Add.
///
///   before:  Sum(a, b) -> y         after:  Add(a, b) -> y
///
/// From opset 8 both broadcast the same way (numpy rules), so the node keeps its inputs,
/// output and name and only changes its op type. Fusions and quantizers look for Add
/// (residual connections into FusedConv's Z, ONNX Runtime's QLinearAdd), and exported
/// ResNets often write their residual as Sum.
///
/// Conditions: default domain, opset >= 8 (older Sum did not broadcast like Add), exactly two
/// inputs, both present.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class sum_to_add final : public pattern_pass {
 public:
  sum_to_add();
  [[nodiscard]] std::string_view name() const noexcept override { return "sum-to-add"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "turn a two-input Sum into Add"; }
};

}  // namespace inferopt
