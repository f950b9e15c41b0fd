#pragma once
/// `infer-shapes`: gives intermediate values the types ONNX shape inference finds.
///
/// Many fusions need a value's rank, shape or element type (MatMul+Add into Gemm, residual
/// Adds into FusedConv), and exported models often carry no `value_info`. This pass runs
/// libonnx's shape inference on a copy of the main graph and copies the types it finds onto
/// values that have none; types already present are never changed. Skipped (no change) when
/// the model's opset is newer than the linked ONNX library knows, or inference fails.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class infer_shapes_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "infer-shapes"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "add the types ONNX shape inference finds to untyped values";
  }
  /// Shape inference works on whole models; subgraphs are typed with their main graph.
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return false; }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
