#pragma once
/// `eliminate-identity`: removes Identity nodes.
///
///   before:  x -> Identity -> y -> consumers      after:  x -> consumers
///
/// When x is a constant (TorchScript exports put Identities over the constants they share
/// between layers), consumers read the constant itself; when y is also a graph output, a copy
/// of the constant sharing its bytes takes y's name (ir::forward_constant).
///
/// Conditions (each checked; a declined node stays as it is):
///   1. default ONNX domain, one input, one output;
///   2. when y is a graph output and x no constant, x must be able to take y's name (see
///      ir::bypass): an Identity that maps a graph input straight to an output stays.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class eliminate_identity final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "eliminate-identity"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "remove Identity nodes"; }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
