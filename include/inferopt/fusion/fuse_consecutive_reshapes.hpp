#pragma once
/// `fuse-consecutive-reshapes`: collapses chains of data-preserving shape ops (Reshape,
/// Flatten, Squeeze, Unsqueeze) into one Reshape, or into nothing when they cancel.
///
///   before:  x -> A -> y -> B -> z            (A, B in {Reshape, Flatten, Squeeze, Unsqueeze})
///   after:   x -> Reshape(target) -> z        or   x -> consumers of z   (Squeeze/Unsqueeze
///                                                                         on the same axes)
///
/// Algebra: all four ops keep the elements in row-major order and only change the shape, so
/// z = reshape(x, shape(z)) whatever A did. B is rewritten in place (it keeps its output
/// name); A is erased once nothing else reads y. The three forms, tried in order:
///   a. cancel: Squeeze(axes a) -> Unsqueeze(axes b) or Unsqueeze(a) -> Squeeze(b) with
///      a == b after making the axes non-negative gives back x exactly;
///   b. Reshape -> Reshape (A any of the four): B's constant target is kept, with each `0`
///      (which copies a dim of y, not of x) replaced by that dim of y;
///   c. any pair where z's shape is static: B becomes Reshape(x, shape(z)).
///
/// Conditions (each checked; a declined pair stays as it is):
///   1. both nodes are default-domain ops of the four kinds with a data input and one output,
///      and A belongs to the same graph as B;
///   2. opset forms: Squeeze/Unsqueeze axes are an attribute before opset 13 and an input
///      from 13; Reshape's target is an attribute before opset 5 and an input from 5; the
///      operands read must be constant;
///   3. cancel: both axis lists are given and equal once non-negative (negative axes need a
///      known rank), and when z is a graph output x must be able to take its name;
///   4. Reshape -> Reshape: a `0` in B's target (without allowzero, opset >= 14) must be
///      resolvable from y's static type or from A's literal target, and must not resolve to
///      0 itself (that would need allowzero); `-1` is kept, as the element count is the same;
///   5. static form: z's type is a static shape without 0 dims.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_consecutive_reshapes final : public pattern_pass {
 public:
  fuse_consecutive_reshapes();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-consecutive-reshapes"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "collapse Reshape/Flatten/Squeeze/Unsqueeze chains into one Reshape, or none when they cancel";
  }
};

}  // namespace inferopt
