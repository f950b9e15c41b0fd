#pragma once
// Recognising an activation node that com.microsoft FusedConv/FusedGemm can absorb, shared by
// fuse-conv-activation and fuse-gemm-activation. docs/FUSED_OPS.md lists what ONNX Runtime
// accepts and why the rest is declined.

#include <optional>
#include <string>
#include <vector>

#include "inferopt/ir/node.hpp"
#include "inferopt/pass/pass.hpp"

namespace inferopt::fusion::detail {

/// The contrib domain of the fused ops and the opset version they are defined in.
inline constexpr const char* microsoft_domain = "com.microsoft";
inline constexpr std::int64_t microsoft_opset = 1;

/// An activation as the fused ops name it, with its parameters in ORT's order (LeakyRelu:
/// alpha; Clip: min, max; HardSigmoid: alpha, beta; none for the others).
struct fused_activation {
  std::string name;
  std::vector<float> params;
};

/// The activation `n` computes when it is one of Relu, LeakyRelu, Tanh, Sigmoid, Clip,
/// HardSigmoid or HardSwish in the default domain with one input and one output, in the form
/// of the model's opset (Clip: attributes before opset 11, constant scalar inputs or none
/// from 11), with finite parameters (Clip also min <= max); nullopt otherwise.
[[nodiscard]] std::optional<fused_activation> match_fused_activation(const pass_context& ctx, const ir::node* n);

/// Whether the model can take a `com.microsoft` op of version 1: it imports no such domain
/// yet (the pass then asks for the import) or imports version 1.
[[nodiscard]] bool microsoft_opset_usable(const pass_context& ctx);

}  // namespace inferopt::fusion::detail
