// Ops that make shape vectors and constants: Shape, Size, Constant, ConstantOfShape, Range.
// Their values are tracked, so what is computed from them downstream stays known.

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using namespace shape_rules;

/// Shape, with start/end (opset 15) clamped to the rank.
void shape_of(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const auto rank = static_cast<std::int64_t>(in ? in->size() : 0);
  if (!in) return ctx.set_output(0, value_facts::of(data_type::int64, {sym_dim{}}));
  auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const std::int64_t start = clamp(ctx.node().attr_int("start", 0));
  const std::int64_t end = clamp(ctx.node().attr_int("end", rank));
  std::vector<sym_dim> values(in->begin() + start, in->begin() + std::max(start, end));
  const auto count = static_cast<std::int64_t>(values.size());
  ctx.set_output(0, value_facts{data_type::int64, sym_shape{count}, std::move(values)});
}

void size_of(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  value_facts out = value_facts::of(data_type::int64, {});
  if (in) out.values = std::vector<sym_dim>{product<sym_dim>(*in)};
  ctx.set_output(0, std::move(out));
}

void constant(inference_context& ctx) {
  const node& n = ctx.node();
  if (const attribute* a = n.find_attribute("value"); a && !a->tensors.empty()) return ctx.set_output(0, facts_of_tensor(a->tensors[0]));
  if (const attribute* a = n.find_attribute("value_int")) return ctx.set_output(0, value_facts{data_type::int64, sym_shape{}, std::vector<sym_dim>{a->i}});
  if (const attribute* a = n.find_attribute("value_ints")) {
    const auto count = static_cast<std::int64_t>(a->ints.size());
    value_facts f = value_facts::of(data_type::int64, {count});
    if (a->ints.size() <= max_tracked_elements) f.values = std::vector<sym_dim>(a->ints.begin(), a->ints.end());
    return ctx.set_output(0, std::move(f));
  }
  if (n.find_attribute("value_float")) return ctx.set_output(0, value_facts::of(data_type::float32, {}));
  if (const attribute* a = n.find_attribute("value_floats")) {
    return ctx.set_output(0, value_facts::of(data_type::float32, {static_cast<std::int64_t>(a->floats.size())}));
  }
  if (const attribute* a = n.find_attribute("value_strings")) {
    return ctx.set_output(0, value_facts::of(data_type::string, {static_cast<std::int64_t>(a->strings.size())}));
  }
  if (n.find_attribute("value_string")) return ctx.set_output(0, value_facts::of(data_type::string, {}));
}

/// ConstantOfShape: dims from input 0's values, type and value from the `value` tensor.
void constant_of_shape(inference_context& ctx) {
  const attribute* a = ctx.node().find_attribute("value");
  const tensor* fill = a && !a->tensors.empty() ? &a->tensors[0] : nullptr;
  const data_type elem = fill ? fill->dtype : data_type::float32;
  const auto& dims = ctx.input(0).values;
  if (!dims) {
    const auto rank = ctx.vector_length(0);
    return ctx.set_output(0, value_facts{elem, rank ? std::optional(sym_shape(*rank)) : std::nullopt, std::nullopt});
  }
  for (const sym_dim& d : *dims) {
    if (auto c = d.constant(); c && *c < 0) ctx.fail("shape has a negative dim " + std::to_string(*c));
  }
  value_facts out = value_facts::of(elem, *dims);
  if (fill && trackable(elem, *out.dims)) {
    const value_facts one = facts_of_tensor(*fill);
    if (one.values && one.values->size() == 1) out.values = std::vector<sym_dim>(*constant_of(product<sym_dim>(*dims)), (*one.values)[0]);
  }
  ctx.set_output(0, std::move(out));
}

/// Range: max(ceil((limit - start) / delta), 0) elements.
void range(inference_context& ctx) {
  const data_type elem = ctx.input(0).elem;
  const auto start = ctx.ints(0), limit = ctx.ints(1), delta = ctx.ints(2);
  const auto& limit_values = ctx.input(1).values;
  const auto& start_values = ctx.input(0).values;
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
    if ((*delta)[0] == 0) ctx.fail("delta is 0");
    const std::int64_t count = std::max<std::int64_t>(ceil_div((*limit)[0] - (*start)[0], (*delta)[0]), 0);
    value_facts out = value_facts::of(elem, {count});
    if (trackable(elem, *out.dims)) {
      std::vector<sym_dim> values;
      for (std::int64_t i = 0; i < count; ++i) values.emplace_back((*start)[0] + i * (*delta)[0]);
      out.values = std::move(values);
    }
    return ctx.set_output(0, std::move(out));
  }
  // range(0, n) or range(s, n) with a symbolic n (position ids): n - s elements.
  if (delta && delta->size() == 1 && (*delta)[0] == 1 && limit_values && start_values && limit_values->size() == 1 &&
      start_values->size() == 1) {
    return ctx.set_output(0, value_facts::of(elem, {(*limit_values)[0] - (*start_values)[0]}));
  }
  ctx.set_output(0, value_facts::of(elem, {sym_dim{}}));
}

}  // namespace

void register_shape_value_rules(rule_table& t) {
  t["Shape"] = shape_of;
  t["Size"] = size_of;
  t["Constant"] = constant;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
}

}  // namespace inferopt::ir::shape_inference_detail
