#pragma once
/// `fuse-consecutive-transposes`: merges Transpose -> Transpose into one Transpose.
///
///   before:  x -> Transpose(p1) -> y -> Transpose(p2) -> z
///   after:   x -> Transpose(c) -> z        or   x -> consumers of z   when c is the identity
///
/// Algebra: y[i] = x[p1[i]] and z[i] = y[p2[i]], so z = transpose(x, c) with c[i] = p1[p2[i]].
/// The second Transpose is rewired in place (it keeps its output name); the first is erased
/// once nothing else reads y, otherwise it stays for its other readers.
///
/// Conditions (each checked; a declined pair stays as it is):
///   1. both nodes are default-domain Transposes with one input and one output;
///   2. each perm is a permutation of 0..r-1 of one rank r; an omitted perm (reverse the
///      dims) needs the rank of its input to be known;
///   3. when c is the identity and z is a graph output, x must be able to take z's name (see
///      ir::bypass); otherwise the second node stays as Transpose(x, identity) and
///      `eliminate-noop` cannot remove it either.

#include "inferopt/pass/pattern_driver.hpp"

namespace inferopt {

class fuse_consecutive_transposes final : public pattern_pass {
 public:
  fuse_consecutive_transposes();
  [[nodiscard]] std::string_view name() const noexcept override { return "fuse-consecutive-transposes"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "merge Transpose -> Transpose into one Transpose, or none when they cancel";
  }
};

}  // namespace inferopt
