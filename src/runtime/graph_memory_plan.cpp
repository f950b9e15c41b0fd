#include "inferopt/runtime/graph_memory_plan.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "kernels/nchwc.hpp"

namespace inferopt::runtime {

namespace {

// ---- ops whose output 0 may be written over an input -------------------------------------
// The one list of in-place ops; `in_place_inputs` reads it.

// Elementwise, one data input: out[i] depends on in[i] alone, so a kernel has read in[i]
// before it writes out[i], whatever its loop order or vector width. Extra inputs (Clip's
// min/max, BatchNormalization's per-channel scale/bias/mean/var) are read-only parameters
// and never the reused slot. Cast qualifies only when both element types have the same size,
// which the caller checks for every op.
constexpr auto unary_elementwise = std::to_array<std::string_view>({
    "Abs",      "Neg",      "Reciprocal", "Floor",       "Ceil",            "Round",     "Sign",
    "Sqrt",     "Exp",      "Log",        "Erf",         "Sin",             "Cos",       "Tan",
    "Asin",     "Acos",     "Atan",       "Sinh",        "Cosh",            "Asinh",     "Acosh",
    "Atanh",    "Relu",     "LeakyRelu",  "Elu",         "Selu",            "Celu",      "ThresholdedRelu",
    "Sigmoid",  "Tanh",     "HardSigmoid", "HardSwish",  "Softplus",        "Softsign",  "Mish",
    "Gelu",     "Shrink",   "Clip",       "Not",         "Cast",            "BatchNormalization"});

// Elementwise with multidirectional broadcasting: out[i] reads a[bcast_a(i)] and b[bcast_b(i)].
// Broadcasting only grows dims, so an input with as many elements as the output has the
// output's shape and bcast(i) == i for it: the unary argument holds for that input. The
// caller's byte-size and element-size check is what guarantees "as many elements".
constexpr auto broadcast_elementwise = std::to_array<std::string_view>(
    {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "PRelu", "And", "Or", "Xor", "BitShift"});

// Views: output 0 holds the data input's bytes unchanged, in the same order; only the shape
// differs (Reshape, Flatten, Squeeze, Unsqueeze) or nothing does (Identity, Dropout at
// inference; in training mode Dropout is elementwise over its input, which is safe too).
// Output and input can be one buffer, and the kernel has nothing to do.
constexpr auto views =
    std::to_array<std::string_view>({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"});

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& ops, std::string_view op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

/// Bytes of a value with a static tensor type, or nullopt.
std::optional<std::size_t> static_bytes(const ir::value& v) {
  const auto& type = v.type();
  if (!type || !type->is_tensor || !type->has_static_shape()) return std::nullopt;
  std::size_t bytes = ir::element_size(type->elem_type);
  if (bytes == 0) return std::nullopt;
  for (const ir::dim& d : *type->dims) {
    if (d.value() < 0) return std::nullopt;
    const auto n = static_cast<std::size_t>(d.value());
    if (n != 0 && bytes > std::numeric_limits<std::size_t>::max() / n) return std::nullopt;
    bytes *= n;
  }
  return bytes;
}

/// Values of `g` that a subgraph of `sub` (at any depth) lists as its output: reads the IR
/// does not record as uses.
void outer_values_named_by_outputs(const ir::graph& sub, const ir::graph& g, std::vector<const ir::value*>& found) {
  for (const ir::value* v : sub.outputs()) {
    if (v && v->owner() == &g) found.push_back(v);
  }
  for (const ir::node* n : sub.nodes()) {
    for (const ir::graph* s : n->subgraphs()) outer_values_named_by_outputs(*s, g, found);
  }
}

/// The node of `g` that owns `user` (itself, or the node holding the subgraph it is in).
const ir::node* top_level(const ir::node* user, const ir::graph& g) {
  while (user && user->owner() != &g) user = user->owner() ? user->owner()->parent_node() : nullptr;
  return user;
}

/// What the planner needs to know about the graph before any value is placed.
struct graph_steps {
  std::unordered_map<const ir::node*, std::size_t> step_of;
  std::unordered_map<const ir::value*, std::size_t> subgraph_output_read;  // value -> last step
  std::unordered_set<const ir::value*> outputs;                           // g's own outputs
  std::size_t last = 0;

  explicit graph_steps(const ir::graph& g) : outputs(g.outputs().begin(), g.outputs().end()) {
    std::size_t k = 0;
    for (const ir::node* n : g.nodes()) {
      step_of.emplace(n, k);
      std::vector<const ir::value*> named;
      for (const ir::graph* s : n->subgraphs()) outer_values_named_by_outputs(*s, g, named);
      for (const ir::value* v : named) subgraph_output_read[v] = k;  // nodes come in order
      ++k;
    }
    last = k == 0 ? 0 : k - 1;
  }

  /// The step of the last read of `v`, not counting being a graph output; `first` if none.
  [[nodiscard]] std::size_t last_read(const ir::value& v, const ir::graph& g, std::size_t first) const {
    std::size_t last_use = first;
    for (const ir::use& u : v.uses()) {
      const ir::node* reader = top_level(u.user, g);
      auto it = reader ? step_of.find(reader) : step_of.end();
      // A reader outside the step order breaks the IR's invariants; keep the value to the end
      // rather than free it too early.
      last_use = std::max(last_use, it == step_of.end() ? last : it->second);
    }
    if (auto it = subgraph_output_read.find(&v); it != subgraph_output_read.end()) {
      last_use = std::max(last_use, it->second);
    }
    return last_use;
  }
};

/// `tensor 12` -> `'conv1_out'`: check_plan names tensors by id, and ids index `names`.
std::string with_value_names(const std::string& message, const std::vector<std::string>& names) {
  constexpr std::string_view word = "tensor ";
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit = message.find(word); hit != std::string::npos; hit = message.find(word, at)) {
    std::size_t end = hit + word.size();
    std::size_t id = 0;
    for (; end < message.size() && message[end] >= '0' && message[end] <= '9'; ++end) {
      id = id * 10 + static_cast<std::size_t>(message[end] - '0');
    }
    out.append(message, at, hit - at);
    if (end > hit + word.size() && id < names.size()) {
      out += "'" + names[id] + "'";
    } else {
      out.append(message, hit, end - hit);
    }
    at = end;
  }
  return out + message.substr(at);
}

/// Sets `may_alias_input_of` on each planned output of a listed op that has an input of its
/// byte and element size dying at its step. Graph outputs are never given away: the caller
/// reads them after the last step.
void add_in_place_hints(const std::vector<const ir::value*>& planned,
                        const std::unordered_map<const ir::value*, std::size_t>& index_of, const graph_steps& steps,
                        std::vector<memory::tensor_lifetime>& tensors) {
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const ir::node* n = planned[i]->producer();
    if (!n || planned[i]->producer_output() != 0) continue;
    for (std::size_t slot : in_place_inputs(*n)) {
      const ir::value* in = n->input(slot);
      auto it = in ? index_of.find(in) : index_of.end();
      if (it == index_of.end() || steps.outputs.contains(in)) continue;
      const memory::tensor_lifetime& input = tensors[it->second];
      if (input.last_use == tensors[i].first_use && input.size == tensors[i].size &&
          ir::element_size(in->elem_type()) == ir::element_size(planned[i]->elem_type())) {
        tensors[i].may_alias_input_of = input.id;
        break;
      }
    }
  }
}

}  // namespace

std::vector<std::size_t> in_place_inputs(const ir::node& n) {
  if (const std::optional<std::size_t> z = nn::blocked_conv_in_place_input(n)) return {*z};
  if (!n.is_onnx_domain()) return {};
  const std::string_view op = n.op_type();
  if (listed(unary_elementwise, op) || listed(views, op)) return {0};
  if (listed(broadcast_elementwise, op)) {
    std::vector<std::size_t> slots(n.inputs().size());
    for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = i;
    return slots;
  }
  return {};
}

graph_memory_plan plan_graph_memory(const ir::graph& g, const graph_memory_options& options) {
  expects(options.alignment != 0 && (options.alignment & (options.alignment - 1)) == 0,
          "alignment must be a power of two");
  const graph_steps steps(g);
  graph_memory_plan out;
  out.alignment = options.alignment;
  out.steps = steps.step_of.size();

  std::unordered_map<const ir::value*, std::size_t> index_of;
  std::vector<const ir::value*> planned;
  auto consider = [&](const ir::value* v, std::size_t first) {
    if (!v || v->is_initializer() || index_of.contains(v)) return;
    const bool is_output = steps.outputs.contains(v);
    if (v->is_graph_input() && !options.include_graph_inputs) return;
    if (is_output && !options.include_graph_outputs) return;
    const std::optional<std::size_t> bytes = static_bytes(*v);
    if (!bytes) {
      out.unknown_size.push_back(v->name());
      return;
    }
    memory::tensor_lifetime t;
    t.id = out.tensors.size();
    t.size = *bytes;
    t.first_use = first;
    t.last_use = is_output ? steps.last : steps.last_read(*v, g, first);
    index_of.emplace(v, t.id);
    planned.push_back(v);
    out.names.push_back(v->name());
    out.tensors.push_back(t);
  };
  if (options.include_graph_inputs) {
    for (const ir::value* v : g.inputs()) consider(v, 0);
  }
  for (const ir::node* n : g.nodes()) {
    for (const ir::value* v : n->outputs()) consider(v, steps.step_of.at(n));
  }

  if (options.in_place) add_in_place_hints(planned, index_of, steps, out.tensors);
  out.plan = memory::plan_arena(out.tensors, options.alignment);
  return out;
}

std::vector<std::string> check_graph_memory_plan(const graph_memory_plan& p) {
  std::vector<std::string> problems = memory::check_plan(p.tensors, p.plan, p.alignment);
  for (std::string& s : problems) s = with_value_names(s, p.names);
  return problems;
}

}  // namespace inferopt::runtime
