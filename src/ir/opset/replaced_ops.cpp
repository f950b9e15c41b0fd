// Ops deprecated for another op with the same inputs and attributes: Upsample for Resize at
// opset 10 and Scatter for ScatterElements at 11. The change sits in both ops' tables: going
// up it turns the old op into the new one, going down the new one into the old (the
// deprecated definition itself is the old op's previous one, so nothing else changes).

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class replaced_op_adapter final : public adapter {
 public:
  replaced_op_adapter(std::string name, std::string old_op, std::string new_op)
      : adapter(std::move(name)), old_op_(std::move(old_op)), new_op_(std::move(new_op)) {}

  bool up(step_context& ctx) const override { return rename(ctx, old_op_, new_op_); }
  bool down(step_context& ctx) const override { return rename(ctx, new_op_, old_op_); }

 private:
  static bool rename(step_context& ctx, const std::string& from, const std::string& to) {
    if (ctx.n->op_type() != from) return false;
    ctx.n->set_op_type(to);
    return true;
  }

  std::string old_op_;
  std::string new_op_;
};

}  // namespace

const adapter& upsample_to_resize() {
  static const replaced_op_adapter a{"upsample-to-resize", "Upsample", "Resize"};
  return a;
}

const adapter& scatter_to_scatter_elements() {
  static const replaced_op_adapter a{"scatter-to-scatter-elements", "Scatter", "ScatterElements"};
  return a;
}

}  // namespace inferopt::ir::opset
