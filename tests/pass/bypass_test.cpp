// ir::bypass: removing a forwarding node while keeping graph output names.

#include "inferopt/ir/rewriting.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;
using ir::bypass;
using ir::bypass_result;

TEST_CASE("bypass points every consumer at the node's input and erases the node", "[pass][bypass]") {
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* id = test::add_op(g, "Identity", {relu->output(0)}, "id");
  ir::node* neg = test::add_op(g, "Neg", {id->output(0)}, "neg");
  ir::node* sig = test::add_op(g, "Sigmoid", {id->output(0)}, "sig");
  g.add_output(neg->output(0));
  g.add_output(sig->output(0));

  CHECK(bypass(g, id) == bypass_result::removed);
  CHECK(id->is_dead());
  CHECK(neg->input(0) == relu->output(0));
  CHECK(sig->input(0) == relu->output(0));
  CHECK(relu->output(0)->uses().size() == 2);
  g.compact();
  CHECK(ir::find_problems(g).empty());
}

TEST_CASE("bypass hands a graph output's name to the input", "[pass][bypass]") {
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* id = test::add_op(g, "Identity", {relu->output(0)}, "id", {"y"});
  id->output(0)->set_type(test::float_type({4}));
  g.add_output(id->output(0));

  CHECK(bypass(g, id) == bypass_result::removed);
  g.compact();
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.outputs()[0] == relu->output(0));
  CHECK(relu->output(0)->name() == "y");
  CHECK(relu->output(0)->type() == test::float_type({4}));  // the output's type came along
  CHECK(ir::find_problems(g).empty());
}

TEST_CASE("bypass declines when the input cannot take the output's name", "[pass][bypass]") {
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  g.add_output(relu->output(0));
  ir::graph_builder b(g);
  ir::value* w = b.constant("w", {4}, {1, 2, 3, 4});

  ir::value* source = nullptr;
  SECTION("a graph input") { source = x; }
  SECTION("an initializer") { source = w; }
  SECTION("another graph output") { source = relu->output(0); }
  ir::node* id = test::add_op(g, "Identity", {source}, "id", {"y"});
  g.add_output(id->output(0));
  const std::string before = test::bytes_of(m);

  CHECK(bypass(g, id) == bypass_result::output_name_conflict);
  CHECK_FALSE(id->is_dead());
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("bypass declines when a subgraph output would rename an outer value", "[pass][bypass]") {
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  std::vector<ir::attribute> attrs;
  attrs.push_back(test::graph_attribute("then_branch", std::make_unique<ir::graph>("then")));
  attrs.push_back(test::graph_attribute("else_branch", std::make_unique<ir::graph>("else")));
  ir::node* n = g.add_node(ir::node_spec{"If", {cond}, {"if_out"}, std::move(attrs), "if", {}});
  g.add_output(n->output(0));
  for (ir::graph* branch : n->subgraphs()) {
    ir::node* id = test::add_op(*branch, "Identity", {relu->output(0)}, branch->name() + "_id");
    branch->add_output(id->output(0));
  }
  const std::string before = test::bytes_of(m);

  ir::graph& then_g = *n->subgraphs()[0];
  CHECK(bypass(then_g, then_g.node_list().front()) == bypass_result::output_name_conflict);
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("bypass declines, before editing, when a subgraph already uses the output's name", "[pass][bypass]") {
  // ONNX lets a branch define a name that the enclosing graph only defines after the If
  // node (it is not visible there yet). Renaming the Identity's input to that name would
  // shadow it, so the graph must stay exactly as it was, with no exception.
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  std::vector<ir::attribute> attrs;
  attrs.push_back(test::graph_attribute("then_branch", std::make_unique<ir::graph>("then")));
  attrs.push_back(test::graph_attribute("else_branch", std::make_unique<ir::graph>("else")));
  ir::node* n = g.add_node(ir::node_spec{"If", {cond}, {"if_out"}, std::move(attrs), "if", {}});
  for (ir::graph* branch : n->subgraphs()) {
    ir::node* neg = test::add_op(*branch, "Neg", {relu->output(0)}, branch->name() + "_neg", {"y"});
    branch->add_output(neg->output(0));
  }
  ir::node* id = test::add_op(g, "Identity", {relu->output(0)}, "id", {"y"});
  g.add_output(n->output(0));
  g.add_output(id->output(0));
  for (ir::value* v : {relu->output(0), id->output(0), n->output(0), n->subgraphs()[0]->outputs()[0],
                       n->subgraphs()[1]->outputs()[0]}) {
    v->set_type(test::float_type({4}));
  }
  REQUIRE(ir::find_problems(g).empty());
  CHECK_NOTHROW(ir::check_with_onnx(m));  // a valid model for ONNX's checker too
  const std::string before = test::bytes_of(m);

  bypass_result result = bypass_result::removed;
  CHECK_NOTHROW(result = bypass(g, id));
  CHECK(result == bypass_result::output_name_conflict);
  CHECK_FALSE(id->is_dead());
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("bypass can forward an input other than the first", "[pass][bypass]") {
  ir::model m = ir::make_model("g");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({4}));
  ir::node* a = test::add_op(g, "Relu", {x}, "a");
  ir::node* b = test::add_op(g, "Neg", {x}, "b");
  ir::node* fwd = test::add_op(g, "Forward", {a->output(0), b->output(0)}, "fwd");
  ir::node* out = test::add_op(g, "Sigmoid", {fwd->output(0)}, "out");
  g.add_output(out->output(0));

  CHECK(bypass(g, fwd, 1, 0) == bypass_result::removed);
  CHECK(out->input(0) == b->output(0));
  CHECK_FALSE(a->output(0)->has_uses());
}
