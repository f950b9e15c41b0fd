#pragma once
/// Static arena plan for the intermediate tensors of an ir graph: the adapter between the
/// graph (execution order, shapes, uses) and `memory::plan_arena`.

#include <cstddef>
#include <string>
#include <vector>

#include "inferopt/ir/fwd.hpp"
#include "inferopt/memory/arena_planner.hpp"

namespace inferopt::runtime {

struct graph_memory_options {
  std::size_t alignment = 64;          ///< offsets and sizes are rounded to this (a power of two)
  bool include_graph_inputs = false;   ///< plan graph inputs too, live from step 0
  bool include_graph_outputs = false;  ///< plan graph outputs too, live to the last step
  bool in_place = true;                ///< give `in_place_inputs` hints to the planner
};

/// The tensors of one graph and where they go. `names[i]`, `tensors[i]`, `plan.offsets[i]`
/// and `plan.in_place[i]` describe the same value; `tensors[i].id == i`.
struct graph_memory_plan {
  std::vector<std::string> names;
  std::vector<memory::tensor_lifetime> tensors;
  memory::arena_plan plan;
  std::size_t steps = 0;      ///< nodes of the graph: step k is the k-th node of `g.nodes()`
  std::size_t alignment = 64; ///< the alignment the plan was made with, for `check_plan`
  /// Values left out because their size is not static: a symbolic or unknown dim, an unknown
  /// rank or element type, strings, or a non-tensor type. In execution order.
  std::vector<std::string> unknown_size;
};

/// Plans one arena for the values that `g`'s nodes produce.
///
/// Step k is the k-th node of `g.nodes()` (topological order). A value produced at step k
/// lives from k to the step of its last reader, or k alone when nothing reads it. A read from
/// inside a subgraph (If, Loop, Scan bodies, also when a subgraph output names the value)
/// counts as a read by the node that owns the subgraph. Sizes are the product of static dims
/// times `ir::element_size`. Initializers are never planned; graph inputs and outputs only
/// when the options ask (outputs listed by a subgraph are not outputs of `g`). Only `g`'s own
/// values are planned: subgraph intermediates are not.
///
/// With `in_place`, output 0 of a node in the `in_place_inputs` list is hinted over an input
/// of its byte and element size that dies at that node (never over a graph output); the
/// planner takes the hint when no other live tensor is in the way.
///
/// Preconditions: `options.alignment` is a power of two; `g` is in topological order, as
/// loading and every pass leave it (not checked: a node's step is its position).
/// @throws inferopt::error(errc::invalid_argument) when the alignment is not a power of two.
/// Thread-safety: reads `g` only; concurrent calls on one unchanging graph are safe.
[[nodiscard]] graph_memory_plan plan_graph_memory(const ir::graph& g, const graph_memory_options& options = {});

/// The input slots whose buffer output 0 of `n` may reuse (an in-place write), best first;
/// empty for ops not on the list (which is in graph_memory_plan.cpp, with why each family is
/// safe). The caller still checks that the input dies at `n` and has the output's byte size
/// and element size.
[[nodiscard]] std::vector<std::size_t> in_place_inputs(const ir::node& n);

/// `memory::check_plan` for a graph plan, with values named instead of numbered: empty when
/// no two live tensors overlap (except an in-place output over its input).
[[nodiscard]] std::vector<std::string> check_graph_memory_plan(const graph_memory_plan& p);

}  // namespace inferopt::runtime
