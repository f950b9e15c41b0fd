#include <cstring>

#include "../graph_access.hpp"
#include "adapter.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/core/float16.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::ir::opset {
namespace {

template <class T>
tensor scalar(double v) {
  return tensor::from_values<T>({}, {}, std::vector<T>{static_cast<T>(v)});
}

/// A scalar of `type` holding `v`, in ONNX's raw layout; nullopt for types without numbers.
std::optional<tensor> scalar_of(data_type type, double v) {
  switch (type) {
    case data_type::float32: return scalar<float>(v);
    case data_type::float64: return scalar<double>(v);
    case data_type::int8: return scalar<std::int8_t>(v);
    case data_type::uint8: return scalar<std::uint8_t>(v);
    case data_type::int16: return scalar<std::int16_t>(v);
    case data_type::uint16: return scalar<std::uint16_t>(v);
    case data_type::int32: return scalar<std::int32_t>(v);
    case data_type::uint32: return scalar<std::uint32_t>(v);
    case data_type::int64: return scalar<std::int64_t>(v);
    case data_type::uint64: return scalar<std::uint64_t>(v);
    case data_type::float16:
    case data_type::bfloat16: {
      const auto f = static_cast<float>(v);
      const std::uint16_t bits = type == data_type::float16 ? float_to_half(f) : float_to_bfloat16(f);
      tensor t = scalar<std::uint16_t>(bits);
      t.dtype = type;  // the same two bytes, read as a 16-bit float
      return t;
    }
    default: return std::nullopt;
  }
}

}  // namespace

void step_context::refuse(const std::string& why) const { throw error(errc::unsupported, "node " + n->describe() + ": " + why); }

namespace {

/// The tensor a default-domain Constant node makes from its `value` attribute, or null.
const tensor* constant_node_value(const value* v) {
  const node* p = v ? v->producer() : nullptr;
  if (!p || !p->is("Constant")) return nullptr;
  const attribute* a = p->find_attribute("value");
  return a && a->kind == attribute_kind::t && !a->tensors.empty() ? &a->tensors[0] : nullptr;
}

/// The value_ints / value_int (or the float forms) of a Constant node, when it has them.
const attribute* constant_node_list(const value* v, const char* list, const char* one) {
  const node* p = v ? v->producer() : nullptr;
  if (!p || !p->is("Constant")) return nullptr;
  const attribute* a = p->find_attribute(list);
  return a ? a : p->find_attribute(one);
}

}  // namespace

std::optional<std::vector<std::int64_t>> step_context::constant_ints(const value* v) const {
  if (auto ints = ir::constant_ints(v, ir_version)) return ints;
  if (const attribute* a = constant_node_list(v, "value_ints", "value_int")) {
    return a->kind == attribute_kind::ints ? a->ints : std::vector<std::int64_t>{a->i};
  }
  const tensor* t = constant_node_value(v);
  return t ? ints_of(*t) : std::nullopt;
}

std::optional<std::vector<double>> step_context::constant_floats(const value* v) const {
  if (auto floats = ir::constant_floats(v, ir_version)) return floats;
  if (const attribute* a = constant_node_list(v, "value_floats", "value_float")) {
    return a->kind == attribute_kind::floats ? std::vector<double>(a->floats.begin(), a->floats.end())
                                             : std::vector<double>{a->f};
  }
  const tensor* t = constant_node_value(v);
  return t ? floats_of(*t) : std::nullopt;
}

namespace {
std::string not_constant(const step_context& ctx, std::size_t index) {
  const value* v = ctx.n->input(index);
  return "input '" + (v ? v->name() : std::string()) + "' must be a constant to become an attribute before opset " +
         std::to_string(ctx.version);
}
}  // namespace

std::vector<std::int64_t> step_context::attribute_ints(std::size_t index) const {
  std::optional<std::vector<std::int64_t>> v = constant_ints(n->input(index));
  if (!v) refuse(not_constant(*this, index));
  return std::move(*v);
}

std::vector<double> step_context::attribute_floats(std::size_t index) const {
  std::optional<std::vector<double>> v = constant_floats(n->input(index));
  if (!v) refuse(not_constant(*this, index));
  return std::move(*v);
}

std::int64_t step_context::rank_or_refuse(const value* v, std::string_view what) const {
  const std::optional<std::size_t> r = rank(v);
  if (!r) refuse(std::string(what) + " needs the rank of '" + (v ? v->name() : std::string("?")) + "', which is not known");
  return static_cast<std::int64_t>(*r);
}

data_type step_context::elem_type_or_refuse(const value* v, std::string_view what) const {
  const data_type t = elem_type(v);
  if (t == data_type::undefined) {
    refuse(std::string(what) + " needs the element type of '" + (v ? v->name() : std::string("?")) +
           "', which is not known");
  }
  return t;
}

value* step_context::add_constant(tensor t, std::string_view suffix) {
  std::string name = g.unique_name(n->label() + "_" + std::string(suffix));
  return g.add_initializer(std::move(name), std::move(t));
}

value* step_context::add_ints(const std::vector<std::int64_t>& values, std::string_view suffix, bool scalar) {
  std::vector<std::int64_t> dims;
  if (!scalar) dims.push_back(static_cast<std::int64_t>(values.size()));
  return add_constant(tensor::from_values<std::int64_t>({}, std::move(dims), values), suffix);
}

bool step_context::move_ints_to_input(const std::string& name, std::size_t index) {
  const std::optional<std::vector<std::int64_t>> values = ints_attribute(*n, name);
  if (!values) return false;
  g.set_input(n, index, add_ints(*values, name));
  n->remove_attribute(name);
  return true;
}

value* step_context::add_scalar(data_type type, double v, std::string_view suffix) {
  std::optional<tensor> t = scalar_of(type, v);
  if (!t) refuse("no " + std::string(suffix) + " scalar of element type " + std::string(to_string(type)));
  return add_constant(std::move(*t), suffix);
}

node* step_context::add_before(std::string op, std::vector<value*> inputs, std::vector<attribute> attributes,
                               std::string_view suffix, std::size_t outputs) {
  // add_node makes the node name unique and names empty outputs after it, uniquely.
  node_spec spec{std::move(op), std::move(inputs), std::vector<std::string>(outputs), std::move(attributes),
                 n->label() + "_" + std::string(suffix), {}};
  return g.add_node(std::move(spec), n);
}

node* step_context::add_after(std::string op, std::vector<value*> inputs, std::vector<attribute> attributes,
                              std::string_view suffix, std::size_t outputs) {
  node* made = add_before(std::move(op), std::move(inputs), std::move(attributes), suffix, outputs);
  if (next) g.move_before(made, next);
  else g.move_before(n, made);  // `n` was last: moving it in front puts `made` last
  return made;
}

void step_context::rebuild(std::string op, std::vector<value*> inputs, std::size_t outputs) {
  for (std::size_t i = outputs; i < n->outputs().size(); ++i) {
    const value* out = n->output(i);
    expects(!out || (!out->has_uses() && !out->is_graph_output()), "rebuild: a dropped output is still read");
  }
  node* old = n;
  node* made = add_before(std::move(op), std::move(inputs), std::move(old->attributes()), "rebuilt", outputs);
  made->set_name(old->name());
  made->set_domain(old->domain());
  graph_access::residual(*made) = graph_access::residual(*old);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < outputs; ++i) {
    value* was = old->output(i);
    names.emplace_back(was ? was->name() : std::string());
    if (!was) continue;
    made->output(i)->set_type(was->type());
    g.replace_all_uses(was, made->output(i));
  }
  g.erase(old);
  // An output the old node omitted keeps the fresh name the new node gave it: it is unread,
  // so naming it changes nothing.
  for (std::size_t i = 0; i < outputs; ++i) {
    if (!names[i].empty()) g.rename(made->output(i), names[i]);
  }
  n = made;
}

void step_context::take_over(value* from, value* to) {
  const std::string name = from->name();
  const std::optional<value_type> type = from->type();
  const std::vector<use> readers = from->uses();
  for (const use& u : readers) {
    if (u.user != to->producer()) u.user->owner()->set_input(u.user, u.input_index, to);
  }
  for (std::size_t i = 0; i < g.outputs().size(); ++i) {
    if (g.outputs()[i] == from) g.set_output(i, to);
  }
  g.rename(from, g.unique_name(name + "_pre"));
  g.clear_value_info(from);
  g.rename(to, name);
  to->set_type(type);
}

std::optional<std::vector<std::int64_t>> ints_attribute(const node& n, std::string_view name) {
  const attribute* a = n.find_attribute(name);
  if (!a || a->kind != attribute_kind::ints) return std::nullopt;
  return a->ints;
}

}  // namespace inferopt::ir::opset
