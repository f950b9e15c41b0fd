// Scatter is deprecated at opset 11 for ScatterElements, which has the same inputs and
// attributes (reduction arrives at 16: attribute_changes.hpp).

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class scatter_to_scatter_elements_adapter final : public adapter {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "scatter-to-scatter-elements"; }

  bool up(step_context& ctx) const override {
    if (ctx.n->op_type() != "Scatter") return false;
    ctx.n->set_op_type("ScatterElements");
    return true;
  }

  bool down(step_context& ctx) const override {
    if (ctx.n->op_type() != "ScatterElements") return false;  // Scatter-11, deprecated, is Scatter-9
    ctx.n->set_op_type("Scatter");
    return true;
  }
};

}  // namespace

const adapter& scatter_to_scatter_elements() {
  static const scatter_to_scatter_elements_adapter a;
  return a;
}

}  // namespace inferopt::ir::opset
