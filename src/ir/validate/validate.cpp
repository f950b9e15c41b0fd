// The validation every command runs first: sizes, structure, schemas, then types.

#include "inferopt/ir/validate.hpp"

#include <string>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/verify.hpp"

namespace inferopt::ir {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw error(errc::invalid_model, what); }

/// Fan-in, fan-out and nesting, before anything walks the graph in ways that cost more.
void check_sizes(const graph& g, const model_limits& limits, std::size_t depth) {
  if (depth > limits.max_subgraph_depth) {
    refuse("subgraph '" + g.name() + "' is nested " + std::to_string(depth) + " deep, over the limit of " +
           std::to_string(limits.max_subgraph_depth));
  }
  for (const node* n : g.nodes()) {
    if (n->inputs().size() > limits.max_node_inputs) {
      refuse("node " + n->describe() + " has " + std::to_string(n->inputs().size()) + " inputs, over the limit of " +
             std::to_string(limits.max_node_inputs));
    }
    if (n->outputs().size() > limits.max_node_outputs) {
      refuse("node " + n->describe() + " has " + std::to_string(n->outputs().size()) + " outputs, over the limit of " +
             std::to_string(limits.max_node_outputs));
    }
    for (const graph* sub : n->subgraphs()) check_sizes(*sub, limits, depth + 1);
  }
}

template <class Check>
void for_each_node(const graph& g, const Check& check) {
  for (const node* n : g.nodes()) {
    check(*n);
    for (const graph* sub : n->subgraphs()) for_each_node(*sub, check);
  }
}

/// Elements of a static shape, saturating at `cap + 1` so that no product overflows.
std::int64_t elements_up_to(const shape& s, std::int64_t cap) {
  std::int64_t n = 1;
  for (const dim& d : s) {
    if (!d.is_static() || d.value() < 0) return 0;
    if (d.value() == 0) return 0;
    if (n > cap / d.value()) return cap + 1;
    n *= d.value();
  }
  return n;
}

void check_tensor_sizes(const graph& g, const model_limits& limits) {
  for (const value* v : g.values()) {
    if (!v->type() || !v->type()->dims) continue;
    if (elements_up_to(*v->type()->dims, limits.max_tensor_elements) > limits.max_tensor_elements) {
      refuse("value '" + v->name() + "' (" + to_string(v->type()->dims) + ") has more than " +
             std::to_string(limits.max_tensor_elements) + " elements, the limit for one tensor");
    }
  }
  for (const node* n : g.nodes()) {
    for (const graph* sub : n->subgraphs()) check_tensor_sizes(*sub, limits);
  }
}

}  // namespace

void validate(const model& m, const model_limits& limits) {
  check_sizes(m.graph(), limits, 0);
  if (auto problems = find_problems(m.graph()); !problems.empty()) refuse(problems.front());
  const std::int64_t opset = m.opset("").value_or(0);
  for_each_node(m.graph(), [&](const node& n) {
    validation::check_schema(n, opset);
    validation::check_attribute_ranges(n);
  });
  // Types come from shape inference, on a copy: the model stays as its file has it.
  model typed = m.clone();
  infer_shapes(typed);
  for_each_node(typed.graph(), [&](const node& n) { validation::check_type_constraints(n, opset); });
  check_tensor_sizes(typed.graph(), limits);
}

}  // namespace inferopt::ir
