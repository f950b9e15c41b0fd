#pragma once
/// Graph edits every rewrite shares: taking a node out of the data flow (Identity, inference
/// Dropout, a no-op Reshape, a folded BatchNormalization), finding the sole reader of a value,
/// giving a node a new constant operand, and editing a constant for one reader when others
/// share it. The pass layer, the fusions, quantization, pruning and the sparse pass all use
/// these; none of them owns them.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/tensor.hpp"

namespace inferopt::ir {

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
bypass_result bypass(graph& g, node* n, std::size_t in_index = 0, std::size_t out_index = 0);

/// Whether `in` may take over the name of the graph output `out` of `g`, as `bypass` does:
/// false when `in` is a graph input, an initializer, another graph output or a value of an
/// enclosing graph, or when an enclosing or nested graph already defines the name. Lets a
/// rewrite that forwards a value from further up a chain decide before it edits.
[[nodiscard]] bool can_take_output_name(const graph& g, const value* in, const value* out);

/// What `bypass(g, n, ...)` would return, with nothing edited: a rewrite that removes several
/// nodes asks first, so that it never stops half way.
[[nodiscard]] bypass_result can_bypass(const graph& g, const node* n, std::size_t in_index = 0,
                                       std::size_t out_index = 0);

/// Whether `forward_past` would succeed: output 0 of `n` is not a graph output, or `in` can
/// take its name (see can_take_output_name).
[[nodiscard]] bool can_forward_past(const graph& g, const node* n, const value* in);

/// Makes every reader of `n`'s output 0 read `in` instead (a value computed earlier that holds
/// the same data) and erases `n`; a graph output keeps its name, which `in` takes. Requires
/// `can_forward_past(g, n, in)` and that `n` has no other used output.
void forward_past(graph& g, node* n, value* in);

/// Erases `n` when none of its outputs is read or is a graph output (a producer whose last
/// reader a rewrite took away); returns whether it did.
bool erase_if_unread(graph& g, node* n);

/// The node reading `v` when that node is its only reader and `v` is not a graph output;
/// null otherwise. A rewrite that absorbs `v`'s consumer into its producer needs this.
[[nodiscard]] node* sole_user(const value* v) noexcept;

/// Makes input `index` of `n` a new initializer holding `t`, named after `base`. The old
/// operand is left alone (other nodes may share it); `remove-unused` drops it once unused.
value* set_constant_input(graph& g, node* n, std::size_t index, tensor t, std::string_view base);

/// Gives `n` its own copy of the initializer it reads at input `index` when anything else
/// (another node, another slot, a graph output) reads it too, and returns the value `n` reads
/// afterwards: the original when `n` was its only reader. Exporters share one initializer
/// between layers (TorchScript shares equal biases), so a rewrite that edits a constant for
/// one node calls this first. The copy is an initializer of `g` named after the original; it
/// shares the tensor's bytes, so copying costs no data.
/// Preconditions: `g` is `n`'s graph; input `index` of `n` is an initializer.
value* own_constant_input(graph& g, node* n, std::size_t index);

/// Gives input `index` of `n` the data `t`, for `n` alone: in place when `n` is the
/// initializer's only reader (its name stays), in a copy otherwise (see own_constant_input).
/// A declared type follows `t`'s element type and dims. Returns the value `n` reads.
/// Preconditions: as own_constant_input.
value* replace_constant_input(graph& g, node* n, std::size_t index, tensor t);

/// Whether `n` is an Identity (default domain, one input, one output) whose input is a
/// constant (see is_constant): what forward_constant takes out.
[[nodiscard]] bool is_identity_of_constant(const node& n, std::int64_t ir_version) noexcept;

/// Takes a node that forwards input `in_index` unchanged (an Identity) out of the data flow
/// when that input is a constant: its readers read the constant itself, and when output
/// `out_index` is a graph output, a copy of the constant sharing its bytes takes the output's
/// name (the constant keeps its own, which other readers may need). TorchScript exports put
/// such nodes over the constants they share between layers.
/// Preconditions: input `in_index` is an initializer; `n`'s other outputs are unused.
void forward_constant(graph& g, node* n, std::size_t in_index = 0, std::size_t out_index = 0);

/// Drops trailing omitted inputs from every node, subgraphs included: the form we write, since
/// onnxruntime crashes on some ops given the empty names (LayerNormalization without B).
void trim_omitted_inputs(graph& g);

}  // namespace inferopt::ir
