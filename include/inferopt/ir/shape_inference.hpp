#pragma once
/// inferopt's own shape inference: the source of truth for every value's type.
///
/// It covers every op the executor runs, at every opset up to 24, with the rules of
/// `ir/shape_rules.hpp` the executor also computes with. Besides shapes it carries the
/// values of small integer tensors (what Shape -> Gather -> Unsqueeze -> Concat -> Reshape
/// chains compute), so exported transformers come out fully shaped, and symbolic dims
/// (`batch`, `sequence`, `batch*sequence`) where the inputs have them. Ops it does not know
/// keep their declared types and are listed in the report; nothing is guessed for them.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

/// The newest default-domain opset the rules follow; newer models are not inferred.
inline constexpr std::int64_t newest_known_opset = 24;

/// What shape inference did.
struct shape_inference_report {
  bool ran = false;
  std::string note;                     ///< why it was skipped or failed; empty when it ran cleanly
  std::size_t values_typed = 0;         ///< values whose type was added or changed
  std::size_t unknown_shapes = 0;       ///< node outputs whose shape is not fully known afterwards
  std::vector<std::string> unknown_ops; ///< op types without a rule (their declared types stay)
};

struct shape_inference_options {
  /// A declared type that contradicts the computed one: an input model's error (`check`), or a
  /// leftover of our own edits to replace (`refresh`, after pruning changed channel counts).
  enum class declared_types { check, refresh };
  declared_types declared = declared_types::check;
  /// Values for symbolic dims (`batch` -> 8): the model is shaped as if its inputs had them.
  std::map<std::string, std::int64_t, std::less<>> dim_values;
};

/// Types every value of the main graph it can, and records the types in `value_info`.
/// @throws error(errc::invalid_model) naming the node when a declared shape contradicts what
///         the node's inputs give (in `check` mode), or when the inputs contradict each other.
shape_inference_report infer_shapes(model& m, const shape_inference_options& options = {});
/// The same for a main graph `g` of a model whose versions (IR, opsets) `versions` holds; its
/// graph is not read (a pass sees its model read-only and the graph it rewrites).
shape_inference_report infer_shapes(graph& g, const model& versions, const shape_inference_options& options = {});

/// The names of the symbolic dims of `g`'s inputs, each once, in the order they appear (what
/// `dim_values` can give sizes to).
[[nodiscard]] std::vector<std::string> symbolic_input_dims(const graph& g);

/// Node outputs of the main graph whose shape is not fully known (unknown rank or a dim that
/// is neither a number nor a symbol).
[[nodiscard]] std::size_t count_unknown_shapes(const graph& g);

}  // namespace inferopt::ir
