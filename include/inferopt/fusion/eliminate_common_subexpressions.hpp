#pragma once
/// `eliminate-common-subexpressions`: merges nodes that compute the same outputs.
///
///   before:  a = Op(x, w) ; b = Op(x, w) ; f(a) ; g(b)
///   after:   a = Op(x, w) ;                f(a) ; g(a)
///
/// Two nodes compute the same outputs when they have the same op type, domain and attributes
/// (compared value for value, floats bit for bit) and read the very same input values in the
/// same order. Nodes are visited in topological order, so the first one of a group is kept
/// and, once a duplicate is folded away, its readers become equal in turn: whole duplicated
/// chains collapse in one run. Equal small constant initializers (same element type, dims and
/// bytes) are merged first, so that nodes reading copies of one constant count as equal.
///
/// Conditions (each checked; a declined node stays as it is):
///   1. the node is deterministic: not RandomNormal, RandomUniform, RandomNormalLike,
///      RandomUniformLike, Multinomial or Bernoulli, and a Dropout only in inference mode
///      (training_mode omitted or constant false from opset 12, is_test = 1 before opset 7);
///   2. the node holds no subgraph (its body could read different outer values) and belongs to
///      the default ONNX domain or com.microsoft; ops of other domains may keep state or draw
///      random numbers, and com.microsoft ops named *Dropout* or *Random* are skipped likewise;
///   3. both nodes have the same outputs present (an omitted optional output cannot stand in);
///   4. a duplicate output that is a graph output keeps its name: the kept output takes the
///      name when it can (see detail::bypass); otherwise the duplicate stays to produce the
///      graph output and only its other readers move;
///   5. initializers are merged only when they are constants (not graph inputs, see
///      pass_context::is_constant), hold plain data of at most 4 KiB, and are no graph output.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class eliminate_common_subexpressions final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "eliminate-common-subexpressions"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "merge nodes with the same op, attributes and inputs, and equal small constants";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
