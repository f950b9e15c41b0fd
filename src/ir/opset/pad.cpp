// Pad: `paddings` is renamed `pads` at opset 2; pads and the constant value become inputs at
// 11 (pads int64, the value of the data's element type); an `axes` input arrives at 18.
//
//   before:  y = Pad(x) pads=[0,1,0,1] value=2   after:  y = Pad(x, [0,1,0,1], 2)
//
// A zero value needs no input (it is the default), so going up needs the data's element
// type only for another value. Going down, pads, value and axes must be constants, and
// pads limited to `axes` are spread over every axis with the data's rank.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class pad_paddings_renamed_adapter final : public adapter {
 public:
  pad_paddings_renamed_adapter() : adapter("pad-paddings-renamed") {}

  bool up(step_context& ctx) const override {
    attribute* a = ctx.n->find_attribute("paddings");
    if (!a) return false;
    a->name = "pads";
    return true;
  }
};

class pad_attributes_to_inputs_adapter final : public adapter {
 public:
  pad_attributes_to_inputs_adapter() : adapter("pad-attributes-to-inputs") {}

  bool up(step_context& ctx) const override {
    if (!ctx.move_ints_to_input("pads", 1)) ctx.refuse("attribute 'pads' is required before opset 11");
    if (const float value = ctx.n->attr_float("value", 0.0f); value != 0.0f) {
      const data_type type = ctx.elem_type_or_refuse(ctx.n->input(0), "a constant value as an input");
      ctx.g.set_input(ctx.n, 2, ctx.add_scalar(type, value, "value"));
    }
    ctx.n->remove_attribute("value");
    return true;
  }

  bool down(step_context& ctx) const override {
    const std::vector<std::int64_t> pads = ctx.attribute_ints(1);
    std::optional<float> value;
    if (ctx.n->input(2)) {
      const std::vector<double> v = ctx.attribute_floats(2);
      if (v.size() != 1) ctx.refuse("the constant value must hold one value");
      value = static_cast<float>(v[0]);
    }
    ctx.rebuild("Pad", {ctx.n->input(0)}, 1);
    ctx.n->set_attribute(attribute::make_ints("pads", pads));
    if (value) ctx.n->set_attribute(attribute::make_float("value", *value));
    return true;
  }
};

class pad_axes_input_adapter final : public adapter {
 public:
  pad_axes_input_adapter() : adapter("pad-axes-input") {}

  bool down(step_context& ctx) const override {
    if (!ctx.n->input(3)) return false;
    const std::vector<std::int64_t> axes = ctx.attribute_ints(3);
    const std::vector<std::int64_t> pads = ctx.attribute_ints(1);
    const std::int64_t rank = ctx.rank_or_refuse(ctx.n->input(0), "spreading pads over every axis");
    if (pads.size() != 2 * axes.size()) ctx.refuse("pads must hold two values per axis");
    std::vector<std::int64_t> full(2 * static_cast<std::size_t>(rank), 0);
    const std::size_t count = axes.size();
    for (std::size_t k = 0; k < count; ++k) {
      const std::int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (a < 0 || a >= rank) ctx.refuse("axis " + std::to_string(axes[k]) + " is out of range");
      full[static_cast<std::size_t>(a)] = pads[k];
      full[static_cast<std::size_t>(a + rank)] = pads[k + count];
    }
    std::vector<value*> inputs{ctx.n->input(0), ctx.add_ints(full, "pads")};
    if (ctx.n->input(2)) inputs.push_back(ctx.n->input(2));
    ctx.rebuild("Pad", std::move(inputs), 1);
    return true;
  }
};

}  // namespace

const adapter& pad_paddings_renamed() { return instance<pad_paddings_renamed_adapter>(); }

const adapter& pad_attributes_to_inputs() { return instance<pad_attributes_to_inputs_adapter>(); }

const adapter& pad_axes_input() { return instance<pad_axes_input_adapter>(); }

}  // namespace inferopt::ir::opset
