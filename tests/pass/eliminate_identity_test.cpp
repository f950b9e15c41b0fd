// eliminate-identity: removes Identity nodes, keeping graph output names.
//
// No numeric check against runtime/: the rewrite does no arithmetic (consumers read the very
// value the Identity forwarded), so the structural checks below are the exact oracle.

#include "inferopt/pass/cleanup/eliminate_identity.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

struct chain {
  ir::model m = ir::make_model("chain");
  ir::value* x = nullptr;
  ir::node* relu = nullptr;
};

/// `x -> Relu -> relu_out`, ready for an Identity to be attached.
chain relu_chain() {
  chain c;
  c.x = c.m.graph().add_input("x", test::float_type({2, 3}));
  c.relu = test::add_op(c.m.graph(), "Relu", {c.x}, "relu");
  c.relu->output(0)->set_type(test::float_type({2, 3}));
  return c;
}

/// Runs eliminate-identity, checks the graph still verifies, and returns the pass's record.
pass_record run(ir::model& m) {
  run_report r = test::run_cleanups(m, "eliminate-identity");
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// Runs the pass on a graph it must decline and checks that nothing changed.
void require_declined(ir::model& m) {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
}

}  // namespace

TEST_CASE("eliminate-identity points consumers at the Identity's input", "[pass][eliminate-identity]") {
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id = test::add_op(g, "Identity", {c.relu->output(0)}, "id");
  ir::node* neg = test::add_op(g, "Neg", {id->output(0)}, "neg");
  g.add_output(neg->output(0));

  pass_record r = run(c.m);
  CHECK(r.changed);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("identities-removed") == 1);
  CHECK(r.nodes_before == 3);
  CHECK(r.nodes_after == 2);
  CHECK(test::count_ops(g, "Identity") == 0);
  CHECK(neg->input(0) == c.relu->output(0));
  CHECK(test::output_names(g) == std::vector<std::string>{"neg_out"});
}

TEST_CASE("eliminate-identity removes an Identity producing a graph output and keeps the output's name",
          "[pass][eliminate-identity]") {
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id = test::add_op(g, "Identity", {c.relu->output(0)}, "id", {"y"});
  g.add_output(id->output(0));

  pass_record r = run(c.m);
  CHECK(r.changed);
  CHECK(test::count_ops(g, "Identity") == 0);
  REQUIRE(test::output_names(g) == std::vector<std::string>{"y"});
  CHECK(g.outputs()[0]->producer() == c.relu);
  CHECK(g.outputs()[0]->type() == test::float_type({2, 3}));
}

TEST_CASE("eliminate-identity removes an Identity inside a chain with several consumers",
          "[pass][eliminate-identity]") {
  // x -> Relu -> Identity -> Identity -> {Neg, Sigmoid, graph output "y"}
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id1 = test::add_op(g, "Identity", {c.relu->output(0)}, "id1");
  ir::node* id2 = test::add_op(g, "Identity", {id1->output(0)}, "id2", {"y"});
  ir::node* neg = test::add_op(g, "Neg", {id2->output(0)}, "neg");
  ir::node* sig = test::add_op(g, "Sigmoid", {id2->output(0)}, "sig");
  ir::node* add = test::add_op(g, "Add", {id1->output(0), id2->output(0)}, "add");
  g.add_output(id2->output(0));
  g.add_output(neg->output(0));
  g.add_output(sig->output(0));
  g.add_output(add->output(0));

  pass_record r = run(c.m);
  CHECK(r.rewrites == 2);
  CHECK(test::count_ops(g, "Identity") == 0);
  CHECK(test::output_names(g) == std::vector<std::string>{"y", "neg_out", "sig_out", "add_out"});
  ir::value* y = g.outputs()[0];
  CHECK(y->producer() == c.relu);
  CHECK(neg->input(0) == y);
  CHECK(sig->input(0) == y);
  CHECK(add->input(0) == y);
  CHECK(add->input(1) == y);
  CHECK(y->uses().size() == 4);
}

TEST_CASE("eliminate-identity declines an Identity from a graph input straight to a graph output",
          "[pass][eliminate-identity]") {
  ir::model m = ir::make_model("passthrough");
  ir::value* x = m.graph().add_input("x", test::float_type({2}));
  ir::node* id = test::add_op(m.graph(), "Identity", {x}, "id", {"y"});
  m.graph().add_output(id->output(0));
  require_declined(m);
  CHECK(test::output_names(m.graph()) == std::vector<std::string>{"y"});
}

TEST_CASE("eliminate-identity points the readers of an Identity over a shared constant at the constant",
          "[pass][eliminate-identity]") {
  // TorchScript's export: one constant, read directly by one node and through an Identity
  // by others. The readers must share the constant itself, not copies of it.
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::graph_builder b(g);
  ir::value* w = b.constant("w", {3}, {1.0f, 2.0f, 3.0f});
  ir::node* direct = test::add_op(g, "Add", {c.relu->output(0), w}, "direct");
  ir::node* id = test::add_op(g, "Identity", {w}, "id");
  ir::node* through = test::add_op(g, "Mul", {direct->output(0), id->output(0)}, "through");
  g.add_output(through->output(0));

  pass_record r = run(c.m);
  CHECK(r.counters.at("constants-forwarded") == 1);
  CHECK(test::count_ops(g, "Identity") == 0);
  CHECK(through->input(1) == w);
  CHECK(w->uses().size() == 2);
  CHECK(g.initializers().size() == 1);
}

TEST_CASE("eliminate-identity replaces an Identity from a constant to a graph output by a renamed copy",
          "[pass][eliminate-identity]") {
  ir::model m = ir::make_model("constant");
  ir::graph& g = m.graph();
  ir::graph_builder b(g);
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::value* w = b.constant("w", {2}, {1.0f, 2.0f});
  ir::node* add = test::add_op(g, "Add", {x, w}, "add");  // keeps w read under its own name
  ir::node* id = test::add_op(g, "Identity", {w}, "id", {"y"});
  g.add_output(add->output(0));
  g.add_output(id->output(0));

  pass_record r = run(m);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(g, "Identity") == 0);
  REQUIRE(test::output_names(g) == std::vector<std::string>{"add_out", "y"});
  const ir::value* y = g.outputs()[1];
  REQUIRE(y->is_constant());
  CHECK(y->initializer()->bytes == w->initializer()->bytes);  // the copy shares the data
  CHECK(add->input(1) == w);
  CHECK(w->name() == "w");

  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("eliminate-identity declines an Identity between two graph outputs", "[pass][eliminate-identity]") {
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id = test::add_op(g, "Identity", {c.relu->output(0)}, "id", {"y"});
  g.add_output(c.relu->output(0));
  g.add_output(id->output(0));
  require_declined(c.m);
}

TEST_CASE("eliminate-identity keeps the second of two Identity outputs of one value", "[pass][eliminate-identity]") {
  // Once the first Identity is gone its input is a graph output, which cannot take a second
  // name: the second Identity must stay.
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id1 = test::add_op(g, "Identity", {c.relu->output(0)}, "id1", {"y1"});
  ir::node* id2 = test::add_op(g, "Identity", {c.relu->output(0)}, "id2", {"y2"});
  g.add_output(id1->output(0));
  g.add_output(id2->output(0));

  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("declined-output-name") == 1);
  CHECK(test::output_names(g) == std::vector<std::string>{"y1", "y2"});
  CHECK(g.outputs()[0]->producer() == c.relu);
  CHECK(g.outputs()[1]->producer() == id2);
  CHECK(id2->input(0) == g.outputs()[0]);

  const std::string once = test::bytes_of(c.m);
  CHECK_FALSE(run(c.m).changed);
  CHECK(test::bytes_of(c.m) == once);
}

TEST_CASE("eliminate-identity declines an output Identity whose name a subgraph already defines",
          "[pass][eliminate-identity]") {
  // The If's branches define their own `y`, legal because the outer `y` is only defined after
  // the If node. Renaming relu_out to `y` would shadow it: the pass must decline, not fail.
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  std::vector<ir::attribute> attrs;
  attrs.push_back(test::graph_attribute("then_branch", std::make_unique<ir::graph>("then")));
  attrs.push_back(test::graph_attribute("else_branch", std::make_unique<ir::graph>("else")));
  ir::node* n = g.add_node(ir::node_spec{"If", {cond}, {"if_out"}, std::move(attrs), "if", {}});
  for (ir::graph* branch : n->subgraphs()) {
    ir::node* neg = test::add_op(*branch, "Neg", {c.relu->output(0)}, branch->name() + "_neg", {"y"});
    branch->add_output(neg->output(0));
  }
  ir::node* id = test::add_op(g, "Identity", {c.relu->output(0)}, "id", {"y"});
  g.add_output(n->output(0));
  g.add_output(id->output(0));
  require_declined(c.m);
}

TEST_CASE("eliminate-identity declines an Identity that is not the default-domain operator",
          "[pass][eliminate-identity]") {
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  ir::node* id = test::add_op(g, "Identity", {c.relu->output(0)}, "id", {}, {}, "com.example");
  ir::node* neg = test::add_op(g, "Neg", {id->output(0)}, "neg");
  g.add_output(neg->output(0));
  require_declined(c.m);
}

TEST_CASE("eliminate-identity declines an Identity without exactly one input and one output",
          "[pass][eliminate-identity]") {
  chain c = relu_chain();
  ir::graph& g = c.m.graph();
  std::vector<ir::value*> inputs;
  std::vector<std::string> outputs{"id_out"};
  SECTION("two inputs") { inputs = {c.relu->output(0), c.x}; }
  SECTION("an omitted input") { inputs = {nullptr}; }
  SECTION("no input") { inputs = {}; }
  SECTION("two outputs") {
    inputs = {c.relu->output(0)};
    outputs = {"id_out", "id_extra"};
  }
  ir::node* id = test::add_op(g, "Identity", inputs, "id", outputs);
  ir::node* neg = test::add_op(g, "Neg", {id->output(0)}, "neg");
  g.add_output(neg->output(0));
  g.add_output(c.relu->output(0));  // keeps Relu live whichever inputs the Identity has
  require_declined(c.m);
}

TEST_CASE("eliminate-identity removes an Identity whose output a subgraph reads", "[pass][eliminate-identity]") {
  ir::model m = ir::make_model("outer");
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
  ir::node* id = test::add_op(g, "Identity", {relu->output(0)}, "id");
  ir::node* n = test::add_if_with_identities(g, cond, id->output(0), "if");
  g.add_output(n->output(0));

  pass_record r = run(m);
  CHECK(r.rewrites == 3);  // two in the branches, one outside
  CHECK(test::count_ops_recursive(g, "Identity") == 0);
  ir::graph& then_g = *n->subgraphs()[0];
  CHECK(then_g.node_list().front()->input(0) == relu->output(0));
}

TEST_CASE("eliminate-identity keeps an Identity mapping an outer value to a subgraph output",
          "[pass][eliminate-identity]") {
  ir::model m = ir::make_model("outer");
  ir::graph& g = m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* x = g.add_input("x", test::float_type({2}));
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
  require_declined(m);
  CHECK(test::count_ops_recursive(g, "Identity") == 2);
}

TEST_CASE("eliminate-identity run twice gives the same graph as run once", "[pass][eliminate-identity]") {
  ir::model m = ir::make_default_model();
  run(m);
  const std::string once = test::bytes_of(m);
  pass_record second = run(m);
  CHECK_FALSE(second.changed);
  CHECK(test::bytes_of(m) == once);
}
