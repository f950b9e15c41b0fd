// QuantizeLinear and DequantizeLinear gain `axis` at opset 13, for per-axis scales and zero
// points (the later attributes are attribute_changes.hpp). Going down, the scale must hold
// one value.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class quantize_per_axis_adapter final : public adapter {
 public:
  quantize_per_axis_adapter() : adapter("quantize-per-axis") {}

  bool down(step_context& ctx) const override {
    const std::optional<std::vector<std::int64_t>> dims = ctx.dims(ctx.n->input(1));
    if (!dims || ir::tensor::element_count(*dims) != 1) ctx.refuse("a per-axis scale has no form before opset 13");
    return ctx.n->remove_attribute("axis");
  }
};

}  // namespace

const adapter& quantize_per_axis() { return instance<quantize_per_axis_adapter>(); }

}  // namespace inferopt::ir::opset
