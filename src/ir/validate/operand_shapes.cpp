// Inputs that hold lists (shapes, pads, axes, scales, sizes, repeats, slice bounds) are
// vectors, as every definition says and onnxruntime's shape inference insists; and a
// constant shape has no negative entry.

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir::validation {
namespace {

/// The inputs of each op that must be vectors, in every definition that has them.
const std::unordered_map<std::string_view, std::vector<std::size_t>>& vector_inputs() {
  static const auto table = [] {
    std::unordered_map<std::string_view, std::vector<std::size_t>> t{
        {"Reshape", {1}},    {"Expand", {1}},       {"ConstantOfShape", {0}}, {"Tile", {1}},
        {"Pad", {1, 3}},     {"Resize", {1, 2, 3}}, {"Upsample", {1}},        {"Slice", {1, 2, 3, 4}},
        {"Squeeze", {1}},    {"Unsqueeze", {1}},    {"Split", {1}},           {"TopK", {1}},
    };
    for (std::string_view reduce : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
      t.emplace(reduce, std::vector<std::size_t>{1});
    }
    return t;
  }();
  return table;
}

void check_vector_inputs(const node& n) {
  auto it = vector_inputs().find(n.op_type());
  if (it == vector_inputs().end()) return;
  for (std::size_t i : it->second) {
    if (i >= n.inputs().size() || !n.inputs()[i]) continue;
    const auto dims = known_dims(*n.inputs()[i]);
    if (dims && dims->size() != 1) {
      refuse(n, "input '" + n.inputs()[i]->name() + "' must be a vector, not of shape " + to_string(dims));
    }
  }
}

/// ConstantOfShape's shape, when it is a constant, has no negative entry: shape inference
/// says so too, but it does not enter Loop and Scan bodies.
void check_constant_shape(const node& n) {
  if (n.op_type() != "ConstantOfShape" || n.inputs().empty() || !n.inputs()[0] || !n.inputs()[0]->is_initializer()) return;
  const tensor& t = *n.inputs()[0]->initializer();
  if (t.dtype != data_type::int64 || !t.has_data() || t.byte_size() != static_cast<std::size_t>(t.element_count()) * 8) return;
  for (std::int64_t d : t.values<std::int64_t>()) {
    if (d < 0) refuse(n, "shape has a negative dim " + std::to_string(d));
  }
}

}  // namespace

void check_operand_shapes(const node& n) {
  if (!n.is_onnx_domain()) return;
  check_vector_inputs(n);
  check_constant_shape(n);
}

}  // namespace inferopt::ir::validation
