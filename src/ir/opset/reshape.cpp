// Reshape takes the shape as input 1 from opset 5 and gains `allowzero` at 14. Going down
// from 14, allowzero = 1 means what 13 means when the shape has no 0 to keep.

#include <algorithm>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class reshape_shape_to_input_adapter final : public adapter {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "reshape-shape-to-input"; }

  bool up(step_context& ctx) const override {
    const std::optional<std::vector<std::int64_t>> shape = ints_attribute(*ctx.n, "shape");
    if (!shape) ctx.refuse("attribute 'shape' is required before opset 5");
    ctx.g.set_input(ctx.n, 1, ctx.add_ints(*shape, "shape"));
    ctx.n->remove_attribute("shape");
    return true;
  }
  bool down(step_context&) const override { return false; }
};

class reshape_allowzero_adapter final : public adapter {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "reshape-allowzero"; }
  bool up(step_context&) const override { return false; }

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

const adapter& reshape_shape_to_input() {
  static const reshape_shape_to_input_adapter a;
  return a;
}

const adapter& reshape_allowzero() {
  static const reshape_allowzero_adapter a;
  return a;
}

}  // namespace inferopt::ir::opset
