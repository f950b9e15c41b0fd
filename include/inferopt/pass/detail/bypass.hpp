#pragma once
// Removing a node that forwards one input unchanged to one output (Identity, inference
// Dropout), shared by the passes that do so.

#include "inferopt/ir/graph.hpp"

namespace inferopt::detail {

/// Why a forwarding node could not be removed, or `removed`.
enum class bypass_result {
  removed,
  output_name_conflict,  ///< the output is a graph output and its input cannot take its name
};

/// Replaces every use of `n`'s output `out_index` by its input `in_index` and erases `n`.
/// When the output is a graph output, the input takes over the output's name so graph
/// outputs keep their names; that is impossible (and declined) when the input is a graph
/// input, an initializer, another graph output or a value of an enclosing graph, or when an
/// enclosing or nested graph already defines the name. A declined bypass edits nothing.
/// Other outputs of `n` must be unused.
bypass_result bypass(ir::graph& g, ir::node* n, std::size_t in_index = 0, std::size_t out_index = 0);

/// Whether `in` may take over the name of the graph output `out` of `g`, as `bypass` does:
/// false when `in` is a graph input, an initializer, another graph output or a value of an
/// enclosing graph, or when an enclosing or nested graph already defines the name. Lets a
/// pass that forwards a value from further up a chain decide before it edits.
[[nodiscard]] bool can_take_output_name(const ir::graph& g, const ir::value* in, const ir::value* out);

/// What `bypass(g, n, ...)` would return, with nothing edited: a fusion that removes several
/// nodes asks first, so that it never stops half way.
[[nodiscard]] bypass_result can_bypass(const ir::graph& g, const ir::node* n, std::size_t in_index = 0,
                                       std::size_t out_index = 0);

}  // namespace inferopt::detail
