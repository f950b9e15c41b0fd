// Split: opset 2 takes the sizes only as the `split` attribute (opset 1 also as input 1);
// 13 takes them only as input 1; 18 adds `num_outputs`, which may split unevenly (the last
// part smaller) where 13 needed an even split.
//
//   before:  a, b = Split(x) axis=1 split=[2,3]   after:  a, b = Split(x, [2,3]) axis=1
//
// Going up to 18 without sizes writes num_outputs, as 18 asks for one of the two. Going
// down from 18, num_outputs becomes sizes when the axis does not divide evenly, which needs
// the axis's size.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

void move_sizes_to_attribute(step_context& ctx) {
  const std::vector<std::int64_t> sizes = ctx.attribute_ints(1);
  ctx.rebuild("Split", {ctx.n->input(0)}, ctx.n->outputs().size());
  ctx.n->set_attribute(attribute::make_ints("split", sizes));
}

class split_input_to_attribute_adapter final : public adapter {
 public:
  split_input_to_attribute_adapter() : adapter("split-input-to-attribute") {}

  bool up(step_context& ctx) const override {
    if (!ctx.n->input(1)) return false;
    move_sizes_to_attribute(ctx);
    return true;
  }
};

class split_sizes_to_input_adapter final : public adapter {
 public:
  split_sizes_to_input_adapter() : adapter("split-sizes-to-input") {}

  bool up(step_context& ctx) const override { return ctx.move_ints_to_input("split", 1); }

  bool down(step_context& ctx) const override {
    if (!ctx.n->input(1)) return false;
    move_sizes_to_attribute(ctx);
    return true;
  }
};

class split_num_outputs_adapter final : public adapter {
 public:
  split_num_outputs_adapter() : adapter("split-num-outputs") {}

  bool up(step_context& ctx) const override {
    if (ctx.n->input(1) || ctx.n->find_attribute("num_outputs")) return false;
    ctx.n->set_attribute(attribute::make_int("num_outputs", static_cast<std::int64_t>(ctx.n->outputs().size())));
    return true;
  }

  bool down(step_context& ctx) const override {
    const attribute* a = ctx.n->find_attribute("num_outputs");
    if (!a) return false;
    const std::int64_t parts = a->i;
    if (parts <= 0 || static_cast<std::size_t>(parts) != ctx.n->outputs().size()) {
      ctx.refuse("num_outputs must equal the number of outputs");
    }
    ctx.n->remove_attribute("num_outputs");
    const std::optional<std::vector<std::int64_t>> dims = ctx.dims(ctx.n->input(0));
    const std::int64_t axis = ctx.n->attr_int("axis", 0);
    const auto rank = dims ? static_cast<std::int64_t>(dims->size()) : 0;
    if (!dims || axis < -rank || axis >= rank) ctx.refuse("num_outputs needs the size of the split axis, which is not known");
    const std::int64_t size = (*dims)[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)];
    if (size % parts == 0) return true;
    // 18's uneven split: parts of ceil(size / parts), the last one what is left.
    const std::int64_t part = (size + parts - 1) / parts;
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(parts), part);
    sizes.back() = size - part * (parts - 1);
    if (sizes.back() < 0) ctx.refuse("num_outputs splits the axis into empty parts");
    ctx.g.set_input(ctx.n, 1, ctx.add_ints(sizes, "split"));
    return true;
  }
};

}  // namespace

const adapter& split_input_to_attribute() { return instance<split_input_to_attribute_adapter>(); }

const adapter& split_sizes_to_input() { return instance<split_sizes_to_input_adapter>(); }

const adapter& split_num_outputs() { return instance<split_num_outputs_adapter>(); }

}  // namespace inferopt::ir::opset
