#pragma once
// What an op's shape rule sees and sets (private to src/ir/shape_inference).

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/node.hpp"
#include "inferopt/ir/tensor.hpp"
#include "inferopt/ir/shape_rules.hpp"
#include "inferopt/ir/symbolic_dim.hpp"

namespace inferopt::ir::shape_inference_detail {

/// What is known about one value: its element type, its dims (nullopt: rank unknown), and,
/// for small integer tensors, its elements (shape arithmetic works on these).
struct value_facts {
  data_type elem = data_type::undefined;
  std::optional<sym_shape> dims;
  std::optional<std::vector<sym_dim>> values;

  static value_facts of(data_type elem, sym_shape dims) { return {elem, std::move(dims), std::nullopt}; }
};

/// Integer tensors of at most this many elements carry their values.
inline constexpr std::size_t max_tracked_elements = 64;

/// Ranks past this are nobody's model; a shape tensor that claims more is a hostile file.
inline constexpr std::int64_t max_rank = 1024;

class inference_context {
 public:
  inference_context(const node& n, std::int64_t opset, std::vector<const value_facts*> inputs,
                    std::vector<const tensor*> constants)
      : node_(n), opset_(opset), inputs_(std::move(inputs)), constants_(std::move(constants)), outputs_(n.outputs().size()) {}

  [[nodiscard]] const ir::node& node() const noexcept { return node_; }
  [[nodiscard]] std::int64_t opset() const noexcept { return opset_; }
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  [[nodiscard]] std::size_t output_count() const noexcept { return outputs_.size(); }
  [[nodiscard]] bool has_input(std::size_t i) const noexcept { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Facts of input i; empty facts for a missing input.
  [[nodiscard]] const value_facts& input(std::size_t i) const noexcept { return has_input(i) ? *inputs_[i] : none_; }
  /// Input i's dims, or null when its rank is unknown.
  [[nodiscard]] const sym_shape* dims(std::size_t i) const noexcept { return input(i).dims ? &*input(i).dims : nullptr; }
  /// The length of 1-D input i when it is a number: how many dims a shape tensor lists.
  /// A length no tensor's rank could have (negative, or past `max_rank`) is unknown.
  [[nodiscard]] std::optional<std::int64_t> vector_length(std::size_t i) const noexcept {
    const sym_shape* d = dims(i);
    const auto n = d && d->size() == 1 ? (*d)[0].constant() : std::nullopt;
    return n && *n >= 0 && *n <= max_rank ? n : std::nullopt;
  }
  /// Input i's data when it is a constant (an initializer or a Constant node's value).
  [[nodiscard]] const tensor* constant(std::size_t i) const noexcept { return i < constants_.size() ? constants_[i] : nullptr; }
  /// Input i's elements when every one is a number.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> ints(std::size_t i) const;
  /// The integer list an op takes from attribute `attr` before `since` and input `index` after.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> int_list(const char* attr, std::size_t index, std::int64_t since) const;

  void set_output(std::size_t i, value_facts f) {
    if (i < outputs_.size()) outputs_[i] = std::move(f);
  }
  /// Output i keeps input j's element type with new dims.
  void set_output_like(std::size_t i, std::size_t j, std::optional<sym_shape> dims) {
    set_output(i, value_facts{input(j).elem, std::move(dims), std::nullopt});
  }
  [[nodiscard]] std::vector<value_facts>& outputs() noexcept { return outputs_; }
  /// A dim only the data decides (NonZero's count): a name of its own, never a guess.
  [[nodiscard]] sym_dim data_dependent_dim(std::size_t output, std::size_t axis) const;
  [[noreturn]] void fail(const std::string& what) const { shape_rules::contradiction(what); }

 private:
  const ir::node& node_;
  std::int64_t opset_;
  std::vector<const value_facts*> inputs_;
  std::vector<const tensor*> constants_;
  std::vector<value_facts> outputs_;
  static inline const value_facts none_{};
};

using shape_function = void (*)(inference_context&);
/// Rules by op type; custom domains are keyed `domain.Op`.
using rule_table = std::unordered_map<std::string, shape_function>;

void register_elementwise_rules(rule_table& t);
void register_nn_rules(rule_table& t);
void register_layout_rules(rule_table& t);   // Reshape, Transpose, Concat, Slice, Pad, Resize, ...
void register_indexing_rules(rule_table& t); // Gather*, Scatter*, NonZero, Compress, OneHot, ...
void register_shape_value_rules(rule_table& t); // Shape, Size, Constant*, Range
void register_reduce_rules(rule_table& t);
void register_quantize_rules(rule_table& t);
[[nodiscard]] const rule_table& builtin_rules();

// ---- helpers the rule files share ------------------------------------------------------------
/// 0, 1, ..., rank-1: the axes an op takes when none are listed.
[[nodiscard]] inline std::vector<std::int64_t> every_axis(std::size_t rank) {
  std::vector<std::int64_t> axes(rank);
  for (std::size_t i = 0; i < rank; ++i) axes[i] = static_cast<std::int64_t>(i);
  return axes;
}

/// Output 0 = input 0's type and shape (activations, normalizations, Softmax).
void same_as_input(inference_context& ctx);
/// Elements of a tracked value computed one by one (Add on shape vectors), if tracked.
[[nodiscard]] std::optional<std::vector<sym_dim>> broadcast_values(const value_facts& a, const value_facts& b,
                                                                   sym_dim (*op)(const sym_dim&, const sym_dim&));
/// A constant's facts: type, dims and, when small and integer, its elements.
[[nodiscard]] value_facts facts_of_tensor(const tensor& t);
/// Whether a value of this type and dims carries its elements (integer, rank <= 1, small).
[[nodiscard]] bool trackable(data_type t, const sym_shape& dims);

}  // namespace inferopt::ir::shape_inference_detail
