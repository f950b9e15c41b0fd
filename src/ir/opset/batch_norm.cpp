// BatchNormalization: at opset 14 the optional outputs become the training-mode running
// statistics (mean, var, saved_mean and saved_var of 9 go) and `training_mode` arrives; at
// 15 scale and bias may have another element type than the input. (is_test goes at 7 and
// spatial at 9: attribute_changes.hpp.)
//
// Inference reads only Y. A node whose other outputs someone reads is refused at 14, since
// their meaning changes; unread ones are dropped.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class batch_norm_training_outputs_adapter final : public adapter {
 public:
  batch_norm_training_outputs_adapter() : adapter("batch-norm-training-outputs") {}

  bool up(step_context& ctx) const override { return drop_statistics(ctx); }

  bool down(step_context& ctx) const override {
    if (ctx.n->attr_int("training_mode", 0) != 0) ctx.refuse("training_mode has no form before opset 14");
    const bool had_flag = ctx.n->remove_attribute("training_mode");
    return drop_statistics(ctx) || had_flag;
  }

 private:
  static bool drop_statistics(step_context& ctx) {
    if (ctx.n->outputs().size() <= 1) return false;
    for (std::size_t i = 1; i < ctx.n->outputs().size(); ++i) {
      const value* out = ctx.n->output(i);
      if (out && (out->has_uses() || out->is_graph_output())) {
        ctx.refuse("output '" + out->name() + "' changes meaning at opset 14 (training-mode statistics)");
      }
    }
    ctx.rebuild("BatchNormalization", inputs_of(*ctx.n), 1);
    return true;
  }
};

class batch_norm_parameter_types_adapter final : public adapter {
 public:
  batch_norm_parameter_types_adapter() : adapter("batch-norm-parameter-types") {}

  bool down(step_context& ctx) const override {
    const data_type x = ctx.elem_type(ctx.n->input(0));
    const data_type mean = ctx.elem_type(ctx.n->input(3));
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
      const data_type t = ctx.elem_type(ctx.n->input(i));
      if (x != data_type::undefined && t != data_type::undefined && t != x) {
        ctx.refuse("scale and bias of another element type than the input have no form before opset 15");
      }
    }
    const data_type var = ctx.elem_type(ctx.n->input(4));
    if (mean != data_type::undefined && var != data_type::undefined && mean != var) {
      ctx.refuse("mean and var of different element types have no form before opset 15");
    }
    return false;
  }
};

}  // namespace

const adapter& batch_norm_training_outputs() { return instance<batch_norm_training_outputs_adapter>(); }

const adapter& batch_norm_parameter_types() { return instance<batch_norm_parameter_types_adapter>(); }

}  // namespace inferopt::ir::opset
