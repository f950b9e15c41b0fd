#pragma once
/// `eliminate-noop`: removes nodes whose output always equals one of their inputs.
///
///   before:  x -> Op(...) -> y -> consumers      after:  x -> consumers
///
/// What counts as a no-op (x is the forwarded input):
///   - Pad whose pads are all zero (any mode, any constant value);
///   - Cast to the element type x already has;
///   - Reshape whose target, resolved against x's static shape (`0` copies a dim unless
///     allowzero, `-1` is inferred), is x's shape;
///   - Transpose with the identity perm (an omitted perm is the identity for rank <= 1);
///   - Slice that keeps every element: each sliced axis starts at 0 (after clamping), ends at
///     or past its dim and steps by 1, over a static shape;
///   - Concat with one input;
///   - Expand whose target broadcast with x's static shape is x's shape;
///   - Mul by a constant of ones or Add of a constant of zeros, either operand order, when the
///     constant has x's element type and broadcasting it does not enlarge x. Adding +0.0
///     turns a -0.0 into +0.0; the two compare equal, which is all inference relies on.
///
/// Conditions (each checked; a declined node stays as it is):
///   1. default ONNX domain, the op's operands constant where their values decide (pads,
///      target shapes, starts/ends/axes/steps, the Mul/Add constant);
///   2. opset forms: Pad's pads are an attribute before opset 11 and an input from 11; Slice's
///      starts/ends/axes are attributes before opset 10 and inputs from 10; Reshape's target
///      is an attribute before opset 5; allowzero exists from opset 14;
///   3. the shapes or element types the check needs are known;
///   4. when y is a graph output, x must be able to take its name (see ir::bypass): a
///      no-op from a graph input or a constant straight to an output stays.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class eliminate_noop final : public pattern_pass {
 public:
  eliminate_noop();
  [[nodiscard]] std::string_view name() const noexcept override { return "eliminate-noop"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "remove Pad, Cast, Reshape, Transpose, Slice, Concat, Expand, Mul and Add nodes that change nothing";
  }
};

}  // namespace inferopt
