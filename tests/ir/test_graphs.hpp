#pragma once
// Small IR graphs shared by the graph and verify tests: nodes named after their outputs, and
// an If node whose branches read a value of the enclosing graph.

#include <memory>
#include <string>
#include <vector>

#include "inferopt/ir/graph.hpp"

namespace inferopt::test {

/// Adds `name = op(inputs)`: the node is called `name`, its one output `name + "_out"`.
inline ir::node* add_op(ir::graph& g, const std::string& op, std::vector<ir::value*> inputs, const std::string& name,
                        ir::node* position = nullptr) {
  return g.add_node(ir::node_spec{op, std::move(inputs), {name + "_out"}, {}, name, {}}, position);
}

/// A float tensor type of the given static dims.
inline ir::value_type float_type(std::vector<std::int64_t> dims) {
  return ir::value_type{true, ir::data_type::float32, ir::shape(dims.begin(), dims.end())};
}

/// A one-node branch graph `name` computing `op(outer)`, where `outer` belongs to the graph
/// that will hold the If node.
inline std::unique_ptr<ir::graph> branch(const std::string& name, const std::string& op, ir::value* outer) {
  auto sub = std::make_unique<ir::graph>(name);
  ir::node* n = add_op(*sub, op, {outer}, name + "_node");
  sub->add_output(n->output(0));
  return sub;
}

inline ir::attribute graph_attribute(std::string name, std::unique_ptr<ir::graph> g) {
  ir::attribute a;
  a.name = std::move(name);
  a.kind = ir::attribute_kind::g;
  a.graphs.push_back(std::move(g));
  return a;
}

/// `name = If(cond)` with then branch `Identity(outer)` and else branch `Neg(outer)`; the
/// branch graphs are `name_then` and `name_else`, their nodes `name_then_node` and
/// `name_else_node`.
inline ir::node* add_if(ir::graph& g, ir::value* cond, ir::value* outer, const std::string& name,
                        ir::node* position = nullptr) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(graph_attribute("then_branch", branch(name + "_then", "Identity", outer)));
  attrs.push_back(graph_attribute("else_branch", branch(name + "_else", "Neg", outer)));
  return g.add_node(ir::node_spec{"If", {cond}, {name + "_out"}, std::move(attrs), name, {}}, position);
}

}  // namespace inferopt::test
