// Attribute values outside the range their op defines: what a schema's types cannot say and
// what, unchecked, divides by zero or indexes out of bounds further on.

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checks.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::ir::validation {
namespace {

std::string listed(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

/// Every entry of the ints attribute `name`, when present, lies in [minimum, maximum].
void ints_in_range(const node& n, std::string_view name, std::int64_t minimum, std::int64_t maximum) {
  const attribute* a = n.find_attribute(name);
  if (!a) return;
  const auto bound = [&](std::int64_t v) -> std::string {
    if (v < minimum) return " below " + std::to_string(minimum);
    if (v > maximum) return " above " + std::to_string(maximum);
    return {};
  };
  if (a->kind == attribute_kind::i) {
    if (const std::string b = bound(a->i); !b.empty()) refuse(n, std::string(name) + " " + std::to_string(a->i) + " is" + b);
  }
  for (std::int64_t v : a->ints) {
    if (const std::string b = bound(v); !b.empty()) refuse(n, std::string(name) + " " + listed(a->ints) + " has an entry" + b);
  }
}

/// Sizes, strides and counts past 2^31 are no real model's and would overflow the
/// arithmetic of every shape formula (kernel times dilation, channels times group).
constexpr std::int64_t largest_size = (std::int64_t{1} << 31) - 1;

void ints_at_least(const node& n, std::string_view name, std::int64_t minimum) {
  ints_in_range(n, name, minimum, largest_size);
}

/// Windowed ops: a zero stride or dilation divides by zero in every shape formula.
void window_ranges(const node& n) {
  ints_at_least(n, "strides", 1);
  ints_at_least(n, "dilations", 1);
  ints_at_least(n, "kernel_shape", 1);
  ints_at_least(n, "pads", 0);
  ints_at_least(n, "output_padding", 0);
  ints_at_least(n, "output_shape", 0);
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

/// Int attributes that are flags: onnxruntime reads them as 0 or 1 after its own narrowing,
/// so any other value would mean one thing to it and another to us.
void flags_are_flags(const node& n) {
  static const std::vector<std::string_view> flags{
      "transA",           "transB",       "keepdims",   "ceil_mode",         "count_include_pad", "allowzero",
      "select_last_index", "largest",     "sorted",     "noop_with_empty_axes", "exclusive",      "reverse",
      "center_point_box", "training_mode", "saturate", "detect_negative",    "detect_positive"};
  for (const attribute& a : n.attributes()) {
    if (a.kind != attribute_kind::i || (a.i == 0 || a.i == 1)) continue;
    if (std::find(flags.begin(), flags.end(), a.name) != flags.end()) {
      refuse(n, a.name + " " + std::to_string(a.i) + " is a flag and must be 0 or 1");
    }
  }
}

/// A Constant holds exactly one value attribute.
void constant_has_one_value(const node& n) {
  int values = 0;
  for (const attribute& a : n.attributes()) values += a.name == "value" || a.name.rfind("value_", 0) == 0 || a.name == "sparse_value";
  if (values != 1) refuse(n, "a Constant needs exactly one value attribute, not " + std::to_string(values));
}

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
    t["Constant"].push_back(constant_has_one_value);
    return t;
  }();
  return table;
}

}  // namespace

/// A normalization's epsilon keeps its square root real: finite and not negative (onnxruntime
/// refuses a negative one when it fuses the op).
void epsilon_is_not_negative(const node& n) {
  const attribute* a = n.find_attribute("epsilon");
  if (a && a->kind == attribute_kind::f && !(a->f >= 0.0f && std::isfinite(a->f))) {
    refuse(n, "epsilon " + std::to_string(a->f) + " must be finite and not negative");
  }
}

namespace {

/// onnxruntime's convolution and pooling forms, which take Conv's and the pools' window
/// attributes.
bool is_runtime_window_op(const node& n) {
  if (n.domain() == "com.microsoft.nchwc") return true;
  static const std::set<std::string_view> ops{"FusedConv", "NhwcConv", "NhwcMaxPool", "QLinearAveragePool",
                                              "ConvTransposeWithDynamicPads", "NhwcFusedConv"};
  return n.domain() == "com.microsoft" && ops.count(n.op_type()) > 0;
}

}  // namespace

void check_attribute_ranges(const node& n) {
  epsilon_is_not_negative(n);  // every domain: com.microsoft's normalizations take one too
  if (is_runtime_window_op(n)) window_ranges(n);
  if (!n.is_onnx_domain()) return;
  flags_are_flags(n);
  auto it = range_checks().find(n.op_type());
  if (it == range_checks().end()) return;
  for (const range_check& check : it->second) check(n);
}

}  // namespace inferopt::ir::validation
