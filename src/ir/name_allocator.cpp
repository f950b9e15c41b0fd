#include "inferopt/ir/name_allocator.hpp"

#include <cassert>

#include "inferopt/core/error.hpp"

namespace inferopt::ir {

void name_counts::add(std::string_view name, std::size_t times) {
  if (times == 0) return;
  auto it = counts_.find(name);
  if (it == counts_.end()) {
    counts_.emplace(std::string(name), times);
  } else {
    it->second += times;
  }
}

void name_counts::remove(std::string_view name, std::size_t times) {
  auto it = counts_.find(name);
  assert(it != counts_.end() && it->second >= times);  // the graph removes only names it added
  if (it == counts_.end()) return;
  if (it->second <= times) {
    counts_.erase(it);
  } else {
    it->second -= times;
  }
}

std::string name_allocator::value_name(std::string_view stem) {
  return value_stems_.fresh(stem.empty() ? "v" : stem, [this](std::string_view n) { return is_value_name_taken(n); });
}

std::string name_allocator::node_name(std::string_view stem) {
  return node_stems_.fresh(stem.empty() ? "node" : stem, [this](std::string_view n) { return is_node_name_taken(n); });
}

bool name_allocator::is_value_name_taken(std::string_view name) const {
  if (values_.contains(name) || nested_values_.contains(name)) return true;
  for (const name_allocator* up = enclosing_; up; up = up->enclosing_) {
    if (up->values_.contains(name)) return true;
  }
  return false;
}

void name_allocator::add_value(std::string_view name) {
  if (name.empty()) return;
  values_.add(name);
  for (name_allocator* up = enclosing_; up; up = up->enclosing_) up->nested_values_.add(name);
}

void name_allocator::remove_value(std::string_view name) {
  if (name.empty()) return;
  values_.remove(name);
  for (name_allocator* up = enclosing_; up; up = up->enclosing_) up->nested_values_.remove(name);
}

void name_allocator::add_node(std::string_view name) {
  if (!name.empty()) nodes_.add(name);
}

void name_allocator::remove_node(std::string_view name) {
  if (!name.empty()) nodes_.remove(name);
}

void name_allocator::attach(name_allocator& enclosing) {
  expects(enclosing_ == nullptr, "name_allocator: the graph is a subgraph already");
  enclosing_ = &enclosing;
  const auto add_up = [this](std::string_view name, std::size_t count) {
    for (name_allocator* up = enclosing_; up; up = up->enclosing_) up->nested_values_.add(name, count);
  };
  values_.for_each(add_up);
  nested_values_.for_each(add_up);
}

void name_allocator::detach() {
  if (!enclosing_) return;
  const auto remove_up = [this](std::string_view name, std::size_t count) {
    for (name_allocator* up = enclosing_; up; up = up->enclosing_) up->nested_values_.remove(name, count);
  };
  values_.for_each(remove_up);
  nested_values_.for_each(remove_up);
  enclosing_ = nullptr;
}

void name_allocator::copy_stems(const name_allocator& other) {
  value_stems_ = other.value_stems_;
  node_stems_ = other.node_stems_;
}

}  // namespace inferopt::ir
