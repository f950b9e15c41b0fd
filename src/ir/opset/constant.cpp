// Constant gains value_float, value_floats, value_int and value_ints (and the string forms)
// at opset 12. Going down they become the `value` tensor they stand for; strings are
// refused, as the IR does not build string tensors.

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

/// The `value` tensor an opset-12 value_* attribute stands for, or nullopt for none.
std::optional<tensor> tensor_of(const step_context& ctx) {
  if (const attribute* a = ctx.n->find_attribute("value_float")) return tensor::from_values<float>({}, {}, std::vector{a->f});
  if (const attribute* a = ctx.n->find_attribute("value_floats")) {
    return tensor::from_values<float>({}, {static_cast<std::int64_t>(a->floats.size())}, a->floats);
  }
  if (const attribute* a = ctx.n->find_attribute("value_int")) return tensor::from_values<std::int64_t>({}, {}, std::vector{a->i});
  if (const attribute* a = ctx.n->find_attribute("value_ints")) {
    return tensor::from_values<std::int64_t>({}, {static_cast<std::int64_t>(a->ints.size())}, a->ints);
  }
  if (ctx.n->find_attribute("value_string") || ctx.n->find_attribute("value_strings")) {
    ctx.refuse("value_string and value_strings are not converted");
  }
  return std::nullopt;
}

class constant_value_attributes_adapter final : public adapter {
 public:
  constant_value_attributes_adapter() : adapter("constant-value-attributes") {}

  bool down(step_context& ctx) const override {
    std::optional<tensor> t = tensor_of(ctx);
    if (!t) return false;
    for (const char* a : {"value_float", "value_floats", "value_int", "value_ints"}) ctx.n->remove_attribute(a);
    ctx.n->set_attribute(attribute::make_tensor("value", std::move(*t)));
    return true;
  }
};

}  // namespace

const adapter& constant_value_attributes() { return instance<constant_value_attributes_adapter>(); }

}  // namespace inferopt::ir::opset
