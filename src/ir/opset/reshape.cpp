// Reshape takes the shape as input 1 from opset 5 and gains `allowzero` at 14. Going down
// from 14, allowzero = 1 means what 13 means when the shape has no 0 to keep.

#include <algorithm>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class reshape_shape_to_input_adapter final : public adapter {
 public:
  reshape_shape_to_input_adapter() : adapter("reshape-shape-to-input") {}

  bool up(step_context& ctx) const override {
    if (!ctx.move_ints_to_input("shape", 1)) ctx.refuse("attribute 'shape' is required before opset 5");
    return true;
  }
};

class reshape_allowzero_adapter final : public adapter {
 public:
  reshape_allowzero_adapter() : adapter("reshape-allowzero") {}

  bool down(step_context& ctx) const override {
    if (!ctx.n->find_attribute("allowzero")) return false;
    if (ctx.n->attr_int("allowzero", 0) != 0) {
      const std::optional<std::vector<std::int64_t>> shape = ctx.constant_ints(ctx.n->input(1));
      if (!shape || std::find(shape->begin(), shape->end(), 0) != shape->end()) {
        ctx.refuse("allowzero with a shape that may hold 0 has no form before opset 14");
      }
    }
    ctx.n->remove_attribute("allowzero");
    return true;
  }
};

}  // namespace

const adapter& reshape_shape_to_input() { return instance<reshape_shape_to_input_adapter>(); }

const adapter& reshape_allowzero() { return instance<reshape_allowzero_adapter>(); }

}  // namespace inferopt::ir::opset
