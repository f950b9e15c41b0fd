// Attribute values outside the range their op defines: what a schema's types cannot say and
// what, unchecked, divides by zero or indexes out of bounds further on.

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checks.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::ir::validation {
namespace {

[[noreturn]] void refuse(const node& n, const std::string& what) {
  throw error(errc::invalid_model, "node " + n.describe() + ": " + what);
}

std::string listed(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

/// Every entry of the ints attribute `name`, when present, is at least `minimum`.
void ints_at_least(const node& n, std::string_view name, std::int64_t minimum) {
  const attribute* a = n.find_attribute(name);
  if (!a) return;
  if (a->kind == attribute_kind::i && a->i < minimum) {
    refuse(n, std::string(name) + " " + std::to_string(a->i) + " is below " + std::to_string(minimum));
  }
  for (std::int64_t v : a->ints) {
    if (v < minimum) refuse(n, std::string(name) + " " + listed(a->ints) + " has an entry below " + std::to_string(minimum));
  }
}

/// Windowed ops: a zero stride or dilation divides by zero in every shape formula.
void window_ranges(const node& n) {
  ints_at_least(n, "strides", 1);
  ints_at_least(n, "dilations", 1);
  ints_at_least(n, "kernel_shape", 1);
  ints_at_least(n, "pads", 0);
  ints_at_least(n, "output_padding", 0);
  ints_at_least(n, "group", 1);
  if (const attribute* pads = n.find_attribute("pads"); pads && pads->ints.size() % 2 != 0) {
    refuse(n, "pads " + listed(pads->ints) + " must have a begin and an end for each axis");
  }
}

void perm_is_permutation(const node& n) {
  const attribute* perm = n.find_attribute("perm");
  if (!perm) return;
  std::vector<bool> seen(perm->ints.size(), false);
  for (std::int64_t axis : perm->ints) {
    if (axis < 0 || axis >= static_cast<std::int64_t>(seen.size()) || seen[static_cast<std::size_t>(axis)]) {
      refuse(n, "perm " + listed(perm->ints) + " is not a permutation of its axes");
    }
    seen[static_cast<std::size_t>(axis)] = true;
  }
}

void cast_target_is_a_type(const node& n) {
  for (const char* name : {"to", "dtype", "output_dtype"}) {
    const attribute* a = n.find_attribute(name);
    if (!a || a->kind != attribute_kind::i) continue;
    const bool known = a->i >= 0 && a->i <= static_cast<std::int64_t>(data_type::int4);
    if (!known || (a->i == 0 && std::string_view(name) == "to")) {
      refuse(n, std::string(name) + " " + std::to_string(a->i) + " is not an ONNX data type");
    }
  }
}

void positive_block_size(const node& n) { ints_at_least(n, "blocksize", 1); }

using range_check = std::function<void(const node&)>;

const std::unordered_map<std::string_view, std::vector<range_check>>& range_checks() {
  static const std::unordered_map<std::string_view, std::vector<range_check>> table = [] {
    std::unordered_map<std::string_view, std::vector<range_check>> t;
    for (std::string_view op : {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool",
                                "LpPool", "MaxUnpool", "DeformConv", "MaxRoiPool", "Col2Im"}) {
      t[op].push_back(window_ranges);
    }
    t["Transpose"].push_back(perm_is_permutation);
    for (std::string_view op : {"Cast", "CastLike", "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike",
                                "RandomUniformLike", "Multinomial", "Bernoulli"}) {
      t[op].push_back(cast_target_is_a_type);
    }
    t["DepthToSpace"].push_back(positive_block_size);
    t["SpaceToDepth"].push_back(positive_block_size);
    t["LRN"].push_back([](const node& n) { ints_at_least(n, "size", 1); });
    t["Split"].push_back([](const node& n) {
      ints_at_least(n, "split", 0);
      ints_at_least(n, "num_outputs", 1);
    });
    t["GroupNormalization"].push_back([](const node& n) { ints_at_least(n, "num_groups", 1); });
    return t;
  }();
  return table;
}

}  // namespace

void check_attribute_ranges(const node& n) {
  if (!n.is_onnx_domain()) return;
  auto it = range_checks().find(n.op_type());
  if (it == range_checks().end()) return;
  for (const range_check& check : it->second) check(n);
}

}  // namespace inferopt::ir::validation
