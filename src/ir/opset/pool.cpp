// MaxPool gains the Indices output at opset 8 (ceil_mode, dilations and storage_order are
// attribute_changes.hpp). Going down, Indices must be unread and is dropped.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class max_pool_indices_adapter final : public adapter {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "max-pool-indices"; }
  bool up(step_context&) const override { return false; }

  bool down(step_context& ctx) const override {
    if (ctx.n->outputs().size() <= 1) return false;
    const value* indices = ctx.n->output(1);
    if (indices && (indices->has_uses() || indices->is_graph_output())) ctx.refuse("Indices has no form before opset 8");
    ctx.n->remove_attribute("storage_order");  // only Indices depends on it
    ctx.rebuild("MaxPool", inputs_of(*ctx.n), 1);
    return true;
  }
};

}  // namespace

const adapter& max_pool_indices() {
  static const max_pool_indices_adapter a;
  return a;
}

}  // namespace inferopt::ir::opset
