// MaxPool gains the Indices output and storage_order, its layout, at opset 8 (ceil_mode and
// dilations are attribute_changes.hpp). Going down, Indices must be unread and both go.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class max_pool_indices_adapter final : public adapter {
 public:
  max_pool_indices_adapter() : adapter("max-pool-indices") {}

  bool down(step_context& ctx) const override {
    const value* indices = ctx.n->output(1);
    if (indices && (indices->has_uses() || indices->is_graph_output())) ctx.refuse("Indices has no form before opset 8");
    const bool had_order = ctx.n->remove_attribute("storage_order");  // only Indices depends on it
    if (ctx.n->outputs().size() <= 1) return had_order;
    ctx.rebuild("MaxPool", inputs_of(*ctx.n), 1);
    return true;
  }
};

}  // namespace

const adapter& max_pool_indices() { return instance<max_pool_indices_adapter>(); }

}  // namespace inferopt::ir::opset
