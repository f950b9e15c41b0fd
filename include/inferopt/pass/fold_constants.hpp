#pragma once
/// `fold-constants`: evaluates nodes whose inputs are all constant with the reference
/// executor and replaces their outputs by initializers.
///
///   before:  c1, c2 (constants) -> Op -> y -> consumers     after:  y (initializer) -> consumers
///
/// Conditions (a node that fails one is left as it is):
///   1. every present input is a constant (an initializer no graph input can override), or
///      the node is Shape/Size of a value whose shape is static;
///   2. the op is deterministic (no Random*, Multinomial, Bernoulli), has no subgraph and is
///      no Identity (eliminate-identity forwards the constant itself instead of a copy);
///   3. the executor has a kernel for it at the model's opset, and evaluating it succeeds;
///   4. no folded output exceeds `max-bytes` (default 64 MB): folding must not bloat a model
///      (e.g. an Expand to a huge constant is cheaper computed at run time);
///   5. it is no DequantizeLinear: a QDQ model keeps its int8 weights (a quarter of the bytes,
///      and what int8 kernels read), as onnxruntime's constant folding does.
/// Output names are kept, so graph outputs may become initializers with the same name.

#include <cstdint>

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class fold_constants final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "fold-constants"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "evaluate nodes with constant inputs and store their outputs as initializers";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
  void set_option(std::string_view key, std::string_view value) override;
  [[nodiscard]] std::map<std::string, std::string> options() const override;

  [[nodiscard]] std::int64_t max_bytes() const noexcept { return max_bytes_; }

 private:
  [[nodiscard]] bool declared_too_large(const ir::node& n) const;
  std::int64_t max_bytes_ = 64 << 20;
};

}  // namespace inferopt
