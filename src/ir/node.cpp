#include "inferopt/ir/node.hpp"

#include <algorithm>

#include "inferopt/ir/graph.hpp"

namespace inferopt::ir {

attribute::attribute() = default;
attribute::~attribute() = default;
attribute::attribute(attribute&&) noexcept = default;
attribute& attribute::operator=(attribute&&) noexcept = default;

namespace {
attribute named(std::string name, attribute_kind kind) {
  attribute a;
  a.name = std::move(name);
  a.kind = kind;
  return a;
}
}  // namespace

attribute attribute::make_float(std::string name, float v) {
  attribute a = named(std::move(name), attribute_kind::f);
  a.f = v;
  return a;
}
attribute attribute::make_int(std::string name, std::int64_t v) {
  attribute a = named(std::move(name), attribute_kind::i);
  a.i = v;
  return a;
}
attribute attribute::make_string(std::string name, std::string v) {
  attribute a = named(std::move(name), attribute_kind::s);
  a.s = std::move(v);
  return a;
}
attribute attribute::make_floats(std::string name, std::vector<float> v) {
  attribute a = named(std::move(name), attribute_kind::floats);
  a.floats = std::move(v);
  return a;
}
attribute attribute::make_ints(std::string name, std::vector<std::int64_t> v) {
  attribute a = named(std::move(name), attribute_kind::ints);
  a.ints = std::move(v);
  return a;
}
attribute attribute::make_strings(std::string name, std::vector<std::string> v) {
  attribute a = named(std::move(name), attribute_kind::strings);
  a.strings = std::move(v);
  return a;
}
attribute attribute::make_tensor(std::string name, tensor v) {
  attribute a = named(std::move(name), attribute_kind::t);
  a.tensors.push_back(std::move(v));
  return a;
}

const attribute* node::find_attribute(std::string_view name) const noexcept {
  for (const attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

attribute* node::find_attribute(std::string_view name) noexcept {
  for (attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void node::set_attribute(attribute a) {
  if (attribute* existing = find_attribute(a.name)) {
    *existing = std::move(a);
  } else {
    attributes_.push_back(std::move(a));
  }
}

bool node::remove_attribute(std::string_view name) {
  auto it = std::find_if(attributes_.begin(), attributes_.end(), [&](const attribute& a) { return a.name == name; });
  if (it == attributes_.end()) return false;
  attributes_.erase(it);
  return true;
}

namespace {
const attribute* typed(const node& n, std::string_view name, attribute_kind kind) {
  const attribute* a = n.find_attribute(name);
  if (a && a->kind != kind) {
    throw error(errc::invalid_model, "node " + n.describe() + ": attribute '" + std::string(name) + "' has kind " +
                                         std::to_string(static_cast<int>(a->kind)) + ", expected " +
                                         std::to_string(static_cast<int>(kind)));
  }
  return a;
}
}  // namespace

std::int64_t node::attr_int(std::string_view name, std::int64_t fallback) const {
  const attribute* a = typed(*this, name, attribute_kind::i);
  return a ? a->i : fallback;
}
float node::attr_float(std::string_view name, float fallback) const {
  const attribute* a = typed(*this, name, attribute_kind::f);
  return a ? a->f : fallback;
}
std::string node::attr_string(std::string_view name, std::string fallback) const {
  const attribute* a = typed(*this, name, attribute_kind::s);
  return a ? a->s : fallback;
}
std::vector<std::int64_t> node::attr_ints(std::string_view name, std::vector<std::int64_t> fallback) const {
  const attribute* a = typed(*this, name, attribute_kind::ints);
  return a ? a->ints : fallback;
}

void node::set_name(std::string n) {
  if (owner_ && !dead_) {
    owner_->names_.remove_node(name_);
    owner_->names_.add_node(n);
  }
  name_ = std::move(n);
}

std::vector<graph*> node::subgraphs() const {
  std::vector<graph*> out;
  for (const attribute& a : attributes_) {
    for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

graph* node::subgraph(std::string_view name) const {
  const attribute* a = find_attribute(name);
  return a && a->kind == attribute_kind::g && !a->graphs.empty() ? a->graphs.front().get() : nullptr;
}

std::string node::describe() const {
  std::string who = name_.empty() ? "#" + std::to_string(serial_) : "'" + name_ + "'";
  return who + " (" + (domain_.empty() ? "" : domain_ + ".") + op_type_ + ")";
}

}  // namespace inferopt::ir
