// Pow's exponent may have another element type than the base from opset 12 (integer bases
// too, which the element-type check refuses going down). Going down, an exponent of another
// known type goes through a Cast to the base's floating type.

#include "adapters.hpp"
#include "inferopt/ir/constants.hpp"

namespace inferopt::ir::opset {
namespace {

class pow_exponent_type_adapter final : public adapter {
 public:
  pow_exponent_type_adapter() : adapter("pow-exponent-type") {}

  bool down(step_context& ctx) const override {
    const data_type base = ctx.elem_type(ctx.n->input(0));
    const data_type exponent = ctx.elem_type(ctx.n->input(1));
    if (base == exponent || !is_floating(base) || exponent == data_type::undefined) return false;
    node* cast = ctx.add_before("Cast", {ctx.n->input(1)}, attribute_list(attribute::make_int("to", static_cast<std::int64_t>(base))),
                                "exponent_cast");
    ctx.g.set_input(ctx.n, 1, cast->output(0));
    return true;
  }
};

}  // namespace

const adapter& pow_exponent_type() { return instance<pow_exponent_type_adapter>(); }

}  // namespace inferopt::ir::opset
