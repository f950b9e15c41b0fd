// Axis attributes against the rank of what they index. Shapes come first (inference on a
// copy), so these run after it; a rank still unknown is not judged.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir::validation {
namespace {

std::optional<std::int64_t> rank_of(const node& n, std::size_t input) {
  if (input >= n.inputs().size() || !n.inputs()[input]) return std::nullopt;
  const auto& t = n.inputs()[input]->type();
  if (!t || !t->is_tensor || !t->dims) return std::nullopt;
  return static_cast<std::int64_t>(t->dims->size());
}

/// Each entry of the int or ints attribute `name` in [-bound, bound - 1].
void axes_within(const node& n, std::string_view name, std::int64_t bound, std::int64_t rank) {
  const attribute* a = n.find_attribute(name);
  if (!a) return;
  std::vector<std::int64_t> axes = a->ints;
  if (a->kind == attribute_kind::i) axes.push_back(a->i);
  for (std::int64_t axis : axes) {
    if (axis < -bound || axis >= bound) {
      refuse(n, std::string(name) + " " + std::to_string(axis) + " is out of range for an input of rank " +
                    std::to_string(rank));
    }
  }
}

/// How many positions past the rank an op's axis may name: Flatten's axis may equal the
/// rank; Unsqueeze's axes index the output, longer by as many axes as it inserts.
std::int64_t axis_bound(const node& n, std::int64_t rank) {
  if (n.op_type() == "Flatten") return rank + 1;
  if (n.op_type() == "Unsqueeze") {
    const attribute* axes = n.find_attribute("axes");
    return rank + (axes ? static_cast<std::int64_t>(axes->ints.size()) : 0);
  }
  return rank;
}

const std::unordered_map<std::string_view, std::string_view>& axis_attributes() {
  static const std::unordered_map<std::string_view, std::string_view> table{
      {"Softmax", "axis"},      {"LogSoftmax", "axis"},   {"Hardmax", "axis"},       {"Concat", "axis"},
      {"Gather", "axis"},       {"GatherElements", "axis"}, {"ScatterElements", "axis"}, {"Flatten", "axis"},
      {"Split", "axis"},        {"ArgMax", "axis"},       {"ArgMin", "axis"},        {"TopK", "axis"},
      {"LayerNormalization", "axis"}, {"LpNormalization", "axis"}, {"Compress", "axis"},
      {"ReduceMean", "axes"},   {"ReduceSum", "axes"},    {"ReduceMax", "axes"},     {"ReduceMin", "axes"},
      {"ReduceProd", "axes"},   {"ReduceL1", "axes"},     {"ReduceL2", "axes"},      {"ReduceLogSum", "axes"},
      {"ReduceLogSumExp", "axes"}, {"ReduceSumSquare", "axes"}, {"Squeeze", "axes"}, {"Unsqueeze", "axes"},
  };
  return table;
}

}  // namespace

/// How many entries list input `i` holds: 0 when omitted, unknown when its shape is.
std::optional<std::int64_t> list_length(const node& n, std::size_t i) {
  if (i >= n.inputs().size() || !n.inputs()[i]) return 0;
  const auto dims = known_dims(*n.inputs()[i]);
  if (!dims || dims->size() != 1 || !(*dims)[0].is_static()) return std::nullopt;
  return (*dims)[0].value();
}

/// Resize takes scales or sizes, one of them and not both (an empty tensor counts as
/// absent), and the one it takes has an entry per axis it resizes: every axis of X, or
/// those `axes` lists.
void check_resize_operands(const node& n, std::optional<std::int64_t> rank, std::int64_t opset) {
  const auto scales = list_length(n, 2), sizes = list_length(n, 3);
  if (scales != 0 && sizes != 0) refuse(n, "give Resize scales or sizes, not both");
  // Resize-10 took scales as its second input; from 11 they moved behind roi.
  if (opset >= 11 && scales == 0 && sizes == 0) refuse(n, "give Resize scales or sizes");
  const attribute* axes = n.find_attribute("axes");
  const auto resized = axes ? std::optional(static_cast<std::int64_t>(axes->ints.size())) : rank;
  const auto given = scales != 0 ? scales : sizes;
  if (resized && given && *given != *resized) {
    refuse(n, std::string(scales != 0 ? "scales" : "sizes") + " has " + std::to_string(*given) +
                  " entries but Resize resizes " + std::to_string(*resized) + " axes");
  }
}

void check_axes_against_ranks(const node& n, std::int64_t opset) {
  if (!n.is_onnx_domain()) return;
  const auto rank = rank_of(n, 0);
  if (n.op_type() == "Resize") check_resize_operands(n, rank, opset);
  if (!rank) return;
  if (n.op_type() == "Transpose") {
    const attribute* perm = n.find_attribute("perm");
    if (perm && static_cast<std::int64_t>(perm->ints.size()) != *rank) {
      refuse(n, "perm lists " + std::to_string(perm->ints.size()) + " axes for an input of rank " + std::to_string(*rank));
    }
    return;
  }
  auto it = axis_attributes().find(n.op_type());
  if (it != axis_attributes().end()) axes_within(n, it->second, axis_bound(n, *rank), *rank);
}

}  // namespace inferopt::ir::validation
