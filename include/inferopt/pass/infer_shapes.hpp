#pragma once
/// `infer-shapes`: gives every value the type inferopt's shape inference computes.
///
/// Many fusions need a value's rank, shape or element type (MatMul+Add into Gemm, residual
/// Adds into FusedConv), and exported models often carry no `value_info`. This pass runs
/// `ir::infer_shapes` (its own rules, every opset up to 24, symbolic dims carried) on the
/// graph in place and records the result as `value_info`. A declared shape that contradicts
/// what a node's inputs give is the model's error and stops the pipeline naming the node.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class infer_shapes_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "infer-shapes"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "type every value with inferopt's shape inference (symbolic dims, computed shape vectors)";
  }
  /// Shape inference works on whole models; subgraphs are typed with their main graph.
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return false; }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
