// Dropout: the mask output changes from the data's type to bool at opset 10; ratio moves from
// an attribute to optional input 1 at 12, beside an optional training_mode input and a seed.
//
//   before:  y = Dropout(x) ratio=0.2             after:  y = Dropout(x, 0.2)
//
// A mask someone reads cannot change type silently, so such a node is refused at 10; an
// unread mask is dropped. Going down from 12 the ratio must be a constant and training_mode
// absent or a constant false: the older forms are inference only.

#include <algorithm>

#include "adapters.hpp"
#include "inferopt/ir/constants.hpp"

namespace inferopt::ir::opset {
namespace {

bool is_read(const value* v) { return v && (v->has_uses() || v->is_graph_output()); }

class dropout_mask_type_adapter final : public adapter {
 public:
  dropout_mask_type_adapter() : adapter("dropout-mask-type") {}
  bool up(step_context& ctx) const override { return drop_mask(ctx); }
  bool down(step_context& ctx) const override { return drop_mask(ctx); }

 private:
  static bool drop_mask(step_context& ctx) {
    if (ctx.n->outputs().size() < 2) return false;
    if (is_read(ctx.n->output(1))) ctx.refuse("the mask output changes from the data's type to bool at opset 10");
    ctx.rebuild("Dropout", inputs_of(*ctx.n), 1);
    return true;
  }
};

/// Whether `v` is absent or a constant holding only false.
bool is_false(const step_context& ctx, const value* v) {
  if (!v) return true;
  const tensor* t = constant_tensor(v, ctx.ir_version);
  return t && t->dtype == data_type::boolean && t->bytes &&
         std::all_of(t->bytes->begin(), t->bytes->end(), [](char c) { return c == 0; });
}

class dropout_ratio_to_input_adapter final : public adapter {
 public:
  dropout_ratio_to_input_adapter() : adapter("dropout-ratio-to-input") {}

  bool up(step_context& ctx) const override {
    const attribute* ratio = ctx.n->find_attribute("ratio");
    if (!ratio) return false;
    ctx.g.set_input(ctx.n, 1, ctx.add_scalar(data_type::float32, ratio->f, "ratio"));
    ctx.n->remove_attribute("ratio");
    return true;
  }

  bool down(step_context& ctx) const override {
    if (!is_false(ctx, ctx.n->input(2))) ctx.refuse("training_mode has no form before opset 12");
    std::optional<float> ratio;
    if (ctx.n->input(1)) {
      const std::vector<double> v = ctx.attribute_floats(1);
      if (v.size() != 1) ctx.refuse("ratio must hold one value");
      ratio = static_cast<float>(v[0]);
    }
    const bool had_seed = ctx.n->remove_attribute("seed");  // inference draws nothing
    if (ctx.n->inputs().size() <= 1) return had_seed;
    ctx.rebuild("Dropout", {ctx.n->input(0)}, ctx.n->outputs().size());
    if (ratio) ctx.n->set_attribute(attribute::make_float("ratio", *ratio));
    return true;
  }
};

}  // namespace

const adapter& dropout_mask_type() { return instance<dropout_mask_type_adapter>(); }

const adapter& dropout_ratio_to_input() { return instance<dropout_ratio_to_input_adapter>(); }

}  // namespace inferopt::ir::opset
