// dce: removes nodes none of whose outputs is read or is a graph output.
//
// No numeric check against runtime/: removed nodes feed nothing the graph returns, so the
// outputs are computed by exactly the same nodes before and after.

#include "inferopt/pass/cleanup/dead_node_elimination.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

/// `x -> Relu -> relu_out (graph output)`: a live core to hang dead or live nodes off.
struct live_core {
  ir::model m = ir::make_model("dce");
  ir::value* x = nullptr;
  ir::node* relu = nullptr;
  live_core() {
    x = m.graph().add_input("x", test::float_type({4}));
    relu = test::add_op(m.graph(), "Relu", {x}, "relu");
    m.graph().add_output(relu->output(0));
  }
};

pass_record run(ir::model& m) {
  run_report r = test::run_cleanups(m, "dce");
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

void require_declined(ir::model& m) {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
}

}  // namespace

TEST_CASE("dce removes a whole dead chain in one run", "[pass][dce]") {
  live_core c;
  ir::graph& g = c.m.graph();
  ir::node* a = test::add_op(g, "Sigmoid", {c.x}, "a");
  ir::node* b = test::add_op(g, "Neg", {a->output(0)}, "b");
  test::add_op(g, "Add", {b->output(0), c.relu->output(0)}, "c");

  pass_record r = run(c.m);
  CHECK(r.changed);
  CHECK(r.runs == 1);
  CHECK(r.rewrites == 3);
  CHECK(r.counters.at("nodes-removed") == 3);
  CHECK(r.nodes_before == 4);
  CHECK(r.nodes_after == 1);
  CHECK(g.node_count() == 1);
  CHECK(c.relu->output(0)->uses().empty());
  CHECK(test::output_names(g) == std::vector<std::string>{"relu_out"});
}

TEST_CASE("dce removes a dead node whose outputs are all unused, even with several outputs", "[pass][dce]") {
  live_core c;
  test::add_op(c.m.graph(), "Split", {c.x}, "split", {"s0", "s1"});
  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(c.m.graph().find_value("s0") == nullptr);
}

TEST_CASE("dce removes a dead If node together with its branches", "[pass][dce]") {
  live_core c;
  ir::graph& g = c.m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  test::add_if_with_identities(g, cond, c.relu->output(0), "if");
  pass_record r = run(c.m);
  CHECK(r.nodes_before == 6);  // Relu, If and the four branch nodes
  CHECK(r.nodes_after == 1);
  CHECK(c.relu->output(0)->uses().empty());  // the branches' reads of relu_out went too
}

TEST_CASE("dce removes dead nodes inside subgraphs", "[pass][dce]") {
  live_core c;
  ir::graph& g = c.m.graph();
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::node* n = test::add_if_with_identities(g, cond, c.relu->output(0), "if");
  g.add_output(n->output(0));
  ir::graph& then_g = *n->subgraphs()[0];
  test::add_op(then_g, "Sigmoid", {c.x}, "then_dead");

  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(then_g.node_count() == 2);
  CHECK(c.x->uses().size() == 1);  // only Relu reads x now
}

TEST_CASE("dce keeps a node whose output is a graph output or is read", "[pass][dce]") {
  live_core c;
  ir::graph& g = c.m.graph();
  SECTION("read by a live node") {
    ir::node* a = test::add_op(g, "Sigmoid", {c.x}, "a");
    ir::node* b = test::add_op(g, "Add", {a->output(0), c.x}, "b");
    g.add_output(b->output(0));
  }
  SECTION("a graph output") {
    ir::node* a = test::add_op(g, "Sigmoid", {c.x}, "a");
    g.add_output(a->output(0));
  }
  SECTION("one of several outputs is used") {
    ir::node* split = test::add_op(g, "Split", {c.x}, "split", {"s0", "s1"});
    g.add_output(split->output(1));
  }
  SECTION("read only from inside a subgraph") {
    ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    ir::node* a = test::add_op(g, "Sigmoid", {c.x}, "a");
    ir::node* n = test::add_if_with_identities(g, cond, a->output(0), "if");
    g.add_output(n->output(0));
  }
  require_declined(c.m);
}

TEST_CASE("dce keeps a node without outputs outside the default domain", "[pass][dce]") {
  ir::model m = ir::make_model("effects");
  ir::value* x = m.graph().add_input("x", test::float_type({4}));
  ir::node* relu = test::add_op(m.graph(), "Relu", {x}, "relu");
  m.graph().add_output(relu->output(0));
  m.graph().add_node(ir::node_spec{"Print", {x}, {}, {}, "print", "com.example"});
  require_declined(m);
  CHECK(m.graph().node_count() == 2);
}

TEST_CASE("dce removes an unused node outside the default domain when it has outputs", "[pass][dce]") {
  live_core c;
  test::add_op(c.m.graph(), "Custom", {c.x}, "custom", {}, {}, "com.example");
  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(c.m.graph().node_count() == 1);
}

TEST_CASE("dce run twice gives the same graph as run once", "[pass][dce]") {
  ir::model m = ir::make_default_model();
  pass_record first = run(m);
  CHECK(first.changed);  // the default model has a dead Conv -> Sigmoid branch
  CHECK(test::count_ops(m.graph(), "Sigmoid") == 0);
  const std::string once = test::bytes_of(m);
  pass_record second = run(m);
  CHECK_FALSE(second.changed);
  CHECK(test::bytes_of(m) == once);
}
