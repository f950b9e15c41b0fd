#pragma once
/// `eliminate-dropout`: removes Dropout nodes that are the identity at inference.
///
///   before:  x -> Dropout -> y (, mask)      after:  x -> consumers of y
///
/// Conditions, following each opset's definition of Dropout:
///   1. default ONNX domain, data input present;
///   2. the optional `mask` output is unused and not a graph output;
///   3. opsets 1-6: attribute `is_test` is 1 (0, the default, means training), or `ratio` is 0;
///      opsets 7-11: always the identity at inference;
///      opsets 12+: input `training_mode` is absent, or a constant `false` (an initializer or
///      a Constant node); anything the caller could set to true at run time declines;
///   4. when y is a graph output, x must be able to take its name (detail::bypass).

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class eliminate_dropout final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "eliminate-dropout"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "remove Dropout nodes that are the identity at inference";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
