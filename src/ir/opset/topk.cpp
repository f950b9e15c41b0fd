// TopK takes k as input 1 (an int64 tensor of one element) from opset 10.
//
//   before:  values, indices = TopK(x) k=5     after:  values, indices = TopK(x, [5])

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

class topk_k_to_input_adapter final : public adapter {
 public:
  topk_k_to_input_adapter() : adapter("topk-k-to-input") {}

  bool up(step_context& ctx) const override {
    const attribute* k = ctx.n->find_attribute("k");
    if (!k || k->kind != attribute_kind::i) ctx.refuse("attribute 'k' is required before opset 10");
    ctx.g.set_input(ctx.n, 1, ctx.add_ints({k->i}, "k"));
    ctx.n->remove_attribute("k");
    return true;
  }

  bool down(step_context& ctx) const override {
    const std::vector<std::int64_t> k = ctx.attribute_ints(1);
    if (k.size() != 1) ctx.refuse("input K must hold one value");
    ctx.rebuild("TopK", {ctx.n->input(0)}, ctx.n->outputs().size());
    ctx.n->set_attribute(attribute::make_int("k", k[0]));
    return true;
  }
};

}  // namespace

const adapter& topk_k_to_input() { return instance<topk_k_to_input_adapter>(); }

}  // namespace inferopt::ir::opset
