// Gemm's C becomes optional at opset 11 (broadcast goes at 7: attribute_changes.hpp). Going
// down, a Gemm without C gets a zero scalar of A's element type, which broadcasts to Y.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class gemm_optional_c_adapter final : public adapter {
 public:
  gemm_optional_c_adapter() : adapter("gemm-optional-c") {}

  bool down(step_context& ctx) const override {
    if (ctx.n->input(2)) return false;
    const data_type type = ctx.elem_type_or_refuse(ctx.n->input(0), "a zero C");
    ctx.g.set_input(ctx.n, 2, ctx.add_scalar(type, 0.0, "c"));
    return true;
  }
};

}  // namespace

const adapter& gemm_optional_c() { return instance<gemm_optional_c_adapter>(); }

}  // namespace inferopt::ir::opset
