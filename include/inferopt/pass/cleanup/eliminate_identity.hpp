#pragma once
/// `eliminate-identity`: removes Identity nodes.
///
///   before:  x -> Identity -> y -> consumers      after:  x -> consumers
///
/// Conditions (each checked; a declined node stays as it is):
///   1. default ONNX domain, one input, one output;
///   2. when y is a graph output, x must be able to take y's name (see detail::bypass):
///      an Identity that maps a graph input or a constant straight to an output stays.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class eliminate_identity final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "eliminate-identity"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "remove Identity nodes"; }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
