#pragma once
/// `dce`: removes nodes none of whose outputs is used or is a graph output.

#include "inferopt/pass/pass.hpp"

namespace inferopt {

/// Walks the graph backwards so a whole dead chain goes in one run. ONNX operators have no
/// side effects, but a node with no outputs at all in a non-default domain is kept: it may
/// exist for an effect we cannot see.
class dead_node_elimination final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "dce"; }
  [[nodiscard]] std::string_view description() const noexcept override {
    return "remove nodes whose outputs nothing reads";
  }
  bool run(ir::graph& g, pass_context& ctx) override;
};

}  // namespace inferopt
