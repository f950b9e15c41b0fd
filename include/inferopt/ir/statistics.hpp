#pragma once
/// Size and cost figures of a model: operator histogram, parameters, estimated MACs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

struct model_statistics {
  std::map<std::string, std::int64_t> ops;  ///< op type (with domain prefix outside ai.onnx) -> count
  std::int64_t nodes = 0;                   ///< including nodes of subgraphs
  std::int64_t params = 0;                  ///< elements of all initializers and Constant tensors
  std::int64_t param_bytes = 0;
  /// Multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul whose shapes are known.
  std::int64_t macs = 0;
  /// Conv/Gemm/MatMul nodes whose MACs could not be estimated (unknown shapes).
  std::int64_t macs_unknown_nodes = 0;
};

/// Multiply-accumulates of one node (Conv, ConvTranspose, Gemm, MatMul and their ONNX Runtime
/// fused forms), nullopt when its shapes are unknown, 0 for other op types.
[[nodiscard]] std::optional<std::int64_t> node_macs(const node& n);

/// Reads types already on the values: run `infer_shapes` first for MAC estimates.
[[nodiscard]] model_statistics compute_statistics(const model& m);

}  // namespace inferopt::ir
