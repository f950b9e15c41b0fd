// If, Loop and Scan against the bodies they run: the counts that tie a node's inputs and
// outputs to its graphs, which no schema states, the element types the outputs take from
// the bodies, and an If condition of one element.

#include <string>

#include "checks.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/value.hpp"

namespace inferopt::ir::validation {
namespace {

void counts_match(const node& n, const char* what, std::size_t node_count, std::size_t body_count) {
  if (node_count != body_count) {
    refuse(n, "the node has " + std::to_string(node_count) + " " + what + " but its body has " + std::to_string(body_count));
  }
}

data_type elem_of(const value* v) {
  return v && v->type() && v->type()->is_tensor ? v->type()->elem_type : data_type::undefined;
}

/// The node's outputs (as declared or inferred) take the element types of the body outputs
/// they come from, body output `offset + k` giving node output k.
void outputs_match_body(const node& n, const graph& body_graph, std::size_t offset) {
  for (std::size_t k = 0; k < n.outputs().size() && offset + k < body_graph.outputs().size(); ++k) {
    const data_type declared = elem_of(n.outputs()[k]);
    const data_type given = elem_of(body_graph.outputs()[offset + k]);
    if (declared != data_type::undefined && given != data_type::undefined && declared != given) {
      refuse(n, "output '" + n.outputs()[k]->name() + "' is declared " + std::string(to_string(declared)) +
                    " but its body gives " + std::string(to_string(given)));
    }
  }
}

/// An If's condition is one boolean; a static shape must say one element.
void check_condition(const node& n) {
  const value* cond = n.inputs().empty() ? nullptr : n.inputs()[0];
  if (!cond || !cond->type() || !cond->type()->has_static_shape()) return;
  bool one = true;
  for (const dim& d : *cond->type()->dims) one = one && d.value() == 1;
  if (!one) refuse(n, "its condition '" + cond->name() + "' (" + to_string(cond->type()->dims) + ") must have one element");
}

void check_if(const node& n) {
  const graph* then_branch = n.subgraph("then_branch");
  const graph* else_branch = n.subgraph("else_branch");
  if (!then_branch || !else_branch) return;  // the schema check reports missing attributes
  counts_match(n, "outputs", n.outputs().size(), then_branch->outputs().size());
  counts_match(n, "outputs", n.outputs().size(), else_branch->outputs().size());
  for (std::size_t k = 0; k < n.outputs().size(); ++k) {
    const data_type a = elem_of(then_branch->outputs()[k]);
    const data_type b = elem_of(else_branch->outputs()[k]);
    if (a != data_type::undefined && b != data_type::undefined && a != b) {
      refuse(n, "its branches give output " + std::to_string(k) + " as " + std::string(to_string(a)) + " and " +
                    std::string(to_string(b)));
    }
  }
  outputs_match_body(n, *then_branch, 0);
  outputs_match_body(n, *else_branch, 0);
  check_condition(n);
}

void check_loop(const node& n) {
  const graph* b = n.subgraph("body");
  if (!b) return;
  // Inputs: trip count, condition, N carried; body: iteration, condition, N carried.
  counts_match(n, "inputs", n.inputs().size(), b->inputs().size());
  // Body outputs: condition, N carried, K scanned; node outputs: N carried, K scanned.
  counts_match(n, "outputs (plus the condition)", n.outputs().size() + 1, b->outputs().size());
  // Scanned outputs stack the body's values, so they keep its element types too.
  outputs_match_body(n, *b, 1);
}

void check_scan(const node& n) {
  const graph* b = n.subgraph("body");
  if (!b) return;
  // (Inputs differ by opset: Scan-8 takes sequence lengths first.)
  counts_match(n, "outputs", n.outputs().size(), b->outputs().size());
  outputs_match_body(n, *b, 0);
}

}  // namespace

void check_subgraph_interfaces(const node& n) {
  if (!n.is_onnx_domain()) return;
  if (n.op_type() == "If") check_if(n);
  else if (n.op_type() == "Loop") check_loop(n);
  else if (n.op_type() == "Scan") check_scan(n);
}

}  // namespace inferopt::ir::validation
