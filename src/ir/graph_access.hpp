#pragma once
// Private door into the IR's internals for the protobuf bridge. Not installed.

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

struct graph_access {
  static std::string& residual(graph& g) { return g.residual_; }
  static const std::string& residual(const graph& g) { return g.residual_; }
  static std::string& residual(node& n) { return n.residual_; }
  static const std::string& residual(const node& n) { return n.residual_; }
  static std::string& residual(model& m) { return m.residual_; }
  static const std::string& residual(const model& m) { return m.residual_; }
  static std::string& info_residual(value& v) { return v.info_residual_; }
  static const std::string& info_residual(const value& v) { return v.info_residual_; }
  static bool& in_value_info(value& v) { return v.in_value_info_; }
  static bool& declared_in_file(value& v) { return v.declared_in_file_; }
  static bool declared_in_file(const value& v) { return v.declared_in_file_; }
  static std::vector<value*>& value_info_order(graph& g) { return g.value_info_order_; }
  static const std::vector<value*>& value_info_order(const graph& g) { return g.value_info_order_; }
  static std::vector<function_id>& local_functions(model& m) { return m.local_functions_; }
  static void set_parent(graph& g, graph& parent, node* parent_node) { parent.adopt(g, parent_node); }
  static value* new_value(graph& g, std::string name, value_origin origin) { return g.new_value(std::move(name), origin); }
  static void set_origin(value& v, value_origin o) { v.origin_ = o; }
  static void set_initializer_raw(graph& g, value* v, tensor t) {
    v->initializer_ = std::move(t);
    g.initializer_order_.push_back(v);
  }
  static void add_graph_input(graph& g, value* v) { g.inputs_.push_back(v); }
  /// Creates a node with output values but no inputs yet (inputs are wired in a second
  /// sweep so that out-of-order graphs still resolve).
  static node* new_node(graph& g, std::string op, std::string domain, std::string name) {
    return g.insert_node(node_spec{std::move(op), {}, {}, {}, std::move(name), std::move(domain)}, nullptr);
  }
  static void add_output_value(graph& g, node* n, value* v) {
    v->producer_ = n;
    v->producer_output_ = n->outputs_.size();
    n->outputs_.push_back(v);
    (void)g;
  }
  static void push_output_null(node* n) { n->outputs_.push_back(nullptr); }
  static void push_input(graph& g, node* n, value* v) {
    n->inputs_.push_back(v);
    if (v) g.add_use(v, n, n->inputs_.size() - 1);
  }
};

}  // namespace inferopt::ir
