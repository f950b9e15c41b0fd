// The graph's mutation API: use lists, erasing and compaction, topological order, cloning
// and fresh names.

#include <catch2/catch.hpp>

#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "test_graphs.hpp"
#include "test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;
using test::add_if;
using test::add_op;
using test::error_from;
using test::float_type;

namespace {

using slot = std::pair<const ir::node*, std::size_t>;

void collect(const ir::graph& g, std::map<const ir::value*, std::multiset<slot>>& reads,
             std::vector<const ir::value*>& values) {
  for (ir::value* v : g.values()) values.push_back(v);
  for (ir::node* n : g.nodes()) {
    for (std::size_t i = 0; i < n->inputs().size(); ++i) {
      if (n->input(i)) reads[n->input(i)].insert({n, i});
    }
    for (ir::graph* sub : n->subgraphs()) collect(*sub, reads, values);
  }
}

/// Checked independently of `find_problems`: every live value of `g` and its subgraphs lists
/// exactly the (node, slot) pairs of live nodes that read it, and nodes read only live values
/// of `g` or its subgraphs. Returns the first disagreement, or an empty string.
std::string use_list_problem(const ir::graph& g) {
  std::map<const ir::value*, std::multiset<slot>> reads;
  std::vector<const ir::value*> values;
  collect(g, reads, values);
  for (const ir::value* v : values) {
    std::multiset<slot> listed;
    for (const ir::use& u : v->uses()) listed.insert({u.user, u.input_index});
    auto it = reads.find(v);
    const std::multiset<slot> expected = it == reads.end() ? std::multiset<slot>{} : it->second;
    if (listed != expected) {
      return "value '" + v->name() + "' lists " + std::to_string(listed.size()) + " uses, but nodes read it " +
             std::to_string(expected.size()) + " times";
    }
    reads.erase(v);
  }
  if (!reads.empty()) return "a node reads '" + reads.begin()->first->name() + "', which is not a live value here";
  return {};
}

std::vector<std::string> node_names(const ir::graph& g) {
  std::vector<std::string> out;
  for (ir::node* n : g.nodes()) out.push_back(n->name());
  return out;
}

std::set<std::string> value_names(const ir::graph& g) {
  std::set<std::string> out;
  for (ir::value* v : g.values()) out.insert(v->name());
  return out;
}

std::vector<ir::use> uses(std::initializer_list<ir::use> list) { return list; }

ir::value* add_bool_input(ir::graph& g, const std::string& name) {
  return g.add_input(name, ir::value_type{true, ir::data_type::boolean, ir::shape{}});
}

}  // namespace

TEST_CASE("use lists stay consistent as inputs, uses and names change", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::value* y = g.add_input("y", float_type({2}));
  ir::node* a = add_op(g, "Add", {x, x}, "a");  // reads x through two slots
  ir::node* b = add_op(g, "Relu", {a->output(0)}, "b");
  ir::node* c = add_op(g, "Mul", {a->output(0), b->output(0)}, "c");
  g.add_output(c->output(0));
  ir::value* a_out = a->output(0);
  ir::value* c_out = c->output(0);
  REQUIRE(use_list_problem(g).empty());

  SECTION("add_node records one use per input slot") {
    CHECK(x->uses() == uses({{a, 0}, {a, 1}}));
    CHECK(a_out->uses() == uses({{b, 0}, {c, 0}}));
    CHECK(b->output(0)->uses() == uses({{c, 1}}));
    CHECK_FALSE(y->has_uses());
    CHECK(c_out->is_graph_output());
  }

  SECTION("set_input moves the use from the old value to the new one") {
    g.set_input(c, 0, y);
    CHECK(c->input(0) == y);
    CHECK(y->uses() == uses({{c, 0}}));
    CHECK(a_out->uses() == uses({{b, 0}}));
  }

  SECTION("set_input past the end extends the inputs, and null clears a slot") {
    g.set_input(b, 2, y);
    REQUIRE(b->inputs().size() == 3);
    CHECK(b->input(1) == nullptr);
    CHECK(y->uses() == uses({{b, 2}}));
    g.set_input(b, 2, nullptr);
    CHECK_FALSE(y->has_uses());
    g.add_node_input(b, y);
    CHECK(y->uses() == uses({{b, 3}}));
  }

  SECTION("replace_all_uses moves every node use and every graph output") {
    g.replace_all_uses(a_out, y);
    CHECK(b->input(0) == y);
    CHECK(c->input(0) == y);
    CHECK_FALSE(a_out->has_uses());

    ir::node* d = add_op(g, "Neg", {y}, "d");
    g.replace_all_uses(c_out, d->output(0));
    REQUIRE(g.outputs().size() == 1);
    CHECK(g.outputs()[0] == d->output(0));
    CHECK(d->output(0)->is_graph_output());
    CHECK_FALSE(c_out->is_graph_output());
  }

  SECTION("replace_uses_except_outputs moves node uses but leaves graph outputs alone") {
    ir::node* e = add_op(g, "Sigmoid", {c_out}, "e");
    ir::node* d = add_op(g, "Neg", {y}, "d");
    CHECK(g.replace_uses_except_outputs(c_out, d->output(0)) == 1);
    CHECK(e->input(0) == d->output(0));
    CHECK(g.outputs()[0] == c_out);
    CHECK(c_out->is_graph_output());
    CHECK_FALSE(c_out->has_uses());
    CHECK(g.replace_uses_except_outputs(a_out, y) == 2);
    CHECK(g.replace_uses_except_outputs(y, y) == 0);
  }

  SECTION("rename keeps uses, graph outputs and initializer names attached to the value") {
    g.rename(a_out, "sum");
    CHECK(g.find_value("a_out") == nullptr);
    CHECK(g.find_value("sum") == a_out);
    CHECK(b->input(0)->name() == "sum");
    CHECK(a_out->uses() == uses({{b, 0}, {c, 0}}));

    g.rename(c_out, "result");
    CHECK(g.outputs()[0]->name() == "result");

    ir::value* w = g.add_initializer("w", ir::tensor::from_values<float>("w", {2}, {1.0f, 2.0f}));
    g.rename(w, "weights");
    CHECK(w->initializer()->name == "weights");
  }

  SECTION("rename refuses a name used here, in an enclosing graph or in a subgraph") {
    auto taken_here = error_from([&] { g.rename(a_out, "x"); });
    REQUIRE(taken_here);
    CHECK(taken_here->code() == errc::invalid_argument);
    CHECK(a_out->name() == "a_out");

    // The branches read a_out; its new name must not be shadowed by a value inside them.
    ir::node* iff = add_if(g, add_bool_input(g, "cond"), a_out, "iff");
    CHECK(error_from([&] { g.rename(a_out, "iff_then_node_out"); }));
    CHECK(a_out->name() == "a_out");

    ir::graph& then_branch = *iff->subgraphs()[0];
    ir::value* inner = then_branch.find_value("iff_then_node_out");
    REQUIRE(inner);
    CHECK(error_from([&] { then_branch.rename(inner, "x"); }));
    CHECK(inner->name() == "iff_then_node_out");
  }

  SECTION("erase drops the erased node's uses of its inputs") {
    g.remove_output(0);
    g.erase(c);
    CHECK(a_out->uses() == uses({{b, 0}}));
    CHECK_FALSE(b->output(0)->has_uses());
    g.erase(b);
    CHECK_FALSE(a_out->has_uses());
    g.erase(a);
    CHECK_FALSE(x->has_uses());
  }

  CHECK(use_list_problem(g).empty());
}

TEST_CASE("erase is refused while an output is still used or is a graph output", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  ir::node* b = add_op(g, "Neg", {a->output(0)}, "b");
  g.add_output(b->output(0));

  SECTION("an output read by another node") {
    auto e = error_from([&] { g.erase(a); });
    REQUIRE(e);
    CHECK(e->code() == errc::invalid_argument);
    CHECK_THAT(e->what(), Contains("'a'") && Contains("'a_out'"));
    CHECK_FALSE(a->is_dead());
    CHECK(g.node_count() == 2);
    CHECK(g.find_value("a_out") == a->output(0));
    CHECK(x->uses() == uses({{a, 0}}));
    CHECK(a->output(0)->uses() == uses({{b, 0}}));
  }

  SECTION("an output that is a graph output") {
    auto e = error_from([&] { g.erase(b); });
    REQUIRE(e);
    CHECK(e->code() == errc::invalid_argument);
    CHECK_THAT(e->what(), Contains("'b'"));
    CHECK_FALSE(b->is_dead());
    CHECK(a->output(0)->uses() == uses({{b, 0}}));
  }

  SECTION("an output read only from inside a subgraph") {
    g.remove_output(0);
    g.erase(b);
    add_if(g, add_bool_input(g, "cond"), a->output(0), "iff");
    auto e = error_from([&] { g.erase(a); });
    REQUIRE(e);
    CHECK_THAT(e->what(), Contains("'a'"));
    CHECK_FALSE(a->is_dead());
  }

  SECTION("once its consumers are gone the node can be erased") {
    g.remove_output(0);
    g.erase(b);
    g.erase(a);
    CHECK(g.node_count() == 0);
    CHECK_FALSE(x->has_uses());
  }

  CHECK(use_list_problem(g).empty());
}

TEST_CASE("erased nodes and values vanish at once and compact frees them", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::value* w = g.add_initializer("w", ir::tensor::from_values<float>("w", {2}, {1.0f, 2.0f}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  ir::node* dead = add_op(g, "Sigmoid", {a->output(0)}, "dead");
  ir::node* b = add_op(g, "Neg", {a->output(0)}, "b");
  g.add_output(b->output(0));
  ir::value* dead_out = dead->output(0);

  g.erase(dead);
  g.erase_value(w);
  CHECK(dead->is_dead());
  CHECK(dead_out->is_dead());
  CHECK(w->is_dead());
  CHECK(g.node_count() == 2);
  CHECK(node_names(g) == std::vector<std::string>{"a", "b"});
  CHECK(g.node_list() == std::vector<ir::node*>{a, b});
  CHECK(g.find_value("dead_out") == nullptr);
  CHECK(g.find_value("w") == nullptr);
  CHECK(g.initializers().empty());
  CHECK(value_names(g) == std::set<std::string>{"x", "a_out", "b_out"});
  CHECK(a->output(0)->uses() == uses({{b, 0}}));

  g.compact();
  CHECK(g.node_list() == std::vector<ir::node*>{a, b});
  CHECK(value_names(g) == std::set<std::string>{"x", "a_out", "b_out"});
  CHECK(a->output(0)->name() == "a_out");  // live handles survive compaction
  CHECK(g.outputs()[0] == b->output(0));
  CHECK(use_list_problem(g).empty());

  // The erased names are free again.
  ir::node* again = add_op(g, "Sigmoid", {a->output(0)}, "dead");
  CHECK(g.find_value("dead_out") == again->output(0));
  CHECK(g.add_initializer("w", ir::tensor::from_values<float>("w", {1}, {3.0f}))->name() == "w");
  CHECK(use_list_problem(g).empty());
}

TEST_CASE("sort_topologically puts producers before consumers and keeps the order otherwise", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  ir::node* b = add_op(g, "Sigmoid", {a->output(0)}, "b");
  ir::node* c = add_op(g, "Tanh", {b->output(0)}, "c");
  g.add_output(c->output(0));

  SECTION("nodes moved and inserted out of order") {
    g.move_before(c, a);
    add_op(g, "Neg", {x}, "d", b);  // independent of the chain
    REQUIRE(node_names(g) == std::vector<std::string>{"c", "a", "d", "b"});
    g.sort_topologically();
    CHECK(node_names(g) == std::vector<std::string>{"a", "d", "b", "c"});
  }

  SECTION("a node whose subgraph reads a value produced after it") {
    ir::node* iff = add_if(g, add_bool_input(g, "cond"), c->output(0), "iff", a);
    REQUIRE(node_names(g) == std::vector<std::string>{"iff", "a", "b", "c"});
    g.sort_topologically();
    CHECK(node_names(g) == std::vector<std::string>{"a", "b", "c", "iff"});
    CHECK(g.node_list().back() == iff);
  }

  SECTION("a graph already in order, with erased nodes in it") {
    ir::node* spare = add_op(g, "Neg", {x}, "spare", b);
    g.erase(spare);
    g.sort_topologically();
    CHECK(node_names(g) == std::vector<std::string>{"a", "b", "c"});
    g.compact();
    CHECK(node_names(g) == std::vector<std::string>{"a", "b", "c"});
  }

  CHECK(use_list_problem(g).empty());
}

TEST_CASE("sort_topologically throws naming a node on a cycle and leaves the graph as it was", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  std::vector<std::string> on_cycle;

  SECTION("two nodes reading each other's outputs, with a consumer listed first") {
    ir::node* b = add_op(g, "Neg", {a->output(0)}, "b");
    add_op(g, "Sigmoid", {b->output(0)}, "downstream", a);
    add_op(g, "Tanh", {x}, "unrelated", a);
    g.set_input(a, 0, b->output(0));
    on_cycle = {"'a'", "'b'"};
  }

  SECTION("a node reading its own output, after a consumer") {
    add_op(g, "Sigmoid", {a->output(0)}, "downstream", a);
    g.set_input(a, 0, a->output(0));
    on_cycle = {"'a'"};
  }

  const std::vector<ir::node*> before = g.node_list();
  auto e = error_from([&] { g.sort_topologically(); });
  REQUIRE(e);
  CAPTURE(e->what());
  CHECK(e->code() == errc::invalid_model);
  CHECK_THAT(e->what(), Contains("cycle"));
  CHECK_THAT(e->what(), !Contains("downstream") && !Contains("unrelated"));
  bool names_one = false;
  for (const std::string& name : on_cycle) names_one = names_one || std::string(e->what()).find(name) != std::string::npos;
  CHECK(names_one);
  CHECK(g.node_list() == before);
}

TEST_CASE("clone makes a deep copy that shares tensor bytes and copies subgraphs", "[ir][graph]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::value* cond = add_bool_input(g, "cond");
  ir::value* w = g.add_initializer("w", ir::tensor::from_values<float>("w", {2}, {0.5f, -1.5f}));
  ir::node* a = add_op(g, "Add", {x, w}, "a");
  a->output(0)->set_type(float_type({2}));
  ir::node* iff = add_if(g, cond, a->output(0), "iff");
  g.add_output(iff->output(0));
  ir::value* a_out = a->output(0);
  ir::node* then_node = iff->subgraphs()[0]->node_list().at(0);
  ir::node* else_node = iff->subgraphs()[1]->node_list().at(0);
  REQUIRE(a_out->uses() == uses({{then_node, 0}, {else_node, 0}}));
  REQUIRE(use_list_problem(g).empty());

  std::unique_ptr<ir::graph> copy = g.clone();
  REQUIRE(copy);
  ir::value* a_copy = copy->find_value("a_out");
  ir::node* iff_copy = copy->node_list().at(1);

  SECTION("the copy has the same names in the same order, and its own handles") {
    CHECK(copy->name() == "main");
    CHECK(node_names(*copy) == node_names(g));
    CHECK(value_names(*copy) == value_names(g));
    REQUIRE(copy->inputs().size() == 2);
    CHECK(copy->inputs()[0]->name() == "x");
    CHECK(copy->inputs()[0] != x);
    REQUIRE(copy->outputs().size() == 1);
    CHECK(copy->outputs()[0] == iff_copy->output(0));
    CHECK(copy->initializers().size() == 1);
    REQUIRE(a_copy);
    CHECK(a_copy != a_out);
    CHECK(a_copy->producer() == copy->node_list().at(0));
    REQUIRE(a_copy->type());
    CHECK(*a_copy->type() == float_type({2}));
    CHECK(use_list_problem(*copy).empty());
  }

  SECTION("the copy shares tensor bytes instead of copying them") {
    const ir::tensor* t = copy->find_value("w")->initializer();
    REQUIRE(t);
    CHECK(t->bytes == w->initializer()->bytes);
    CHECK(t->values<float>() == std::vector<float>{0.5f, -1.5f});
  }

  SECTION("the copy's subgraphs are new graphs that read the copy's outer values") {
    REQUIRE(iff_copy->op_type() == "If");
    std::vector<ir::graph*> subs = iff_copy->subgraphs();
    REQUIRE(subs.size() == 2);
    CHECK(subs[0] != iff->subgraphs()[0]);
    CHECK(subs[0]->name() == "iff_then");
    CHECK(subs[0]->parent() == copy.get());
    CHECK(subs[0]->parent_node() == iff_copy);
    ir::node* then_copy = subs[0]->node_list().at(0);
    ir::node* else_copy = subs[1]->node_list().at(0);
    CHECK(then_copy != then_node);
    CHECK(then_copy->input(0) == a_copy);
    CHECK(a_copy->uses() == uses({{then_copy, 0}, {else_copy, 0}}));
    CHECK(a_out->uses() == uses({{then_node, 0}, {else_node, 0}}));
    CHECK(subs[0]->outputs()[0] == then_copy->output(0));
  }

  SECTION("editing the copy leaves the original unchanged") {
    const std::vector<std::string> names_before = node_names(g);
    copy->rename(a_copy, "renamed");
    ir::node* extra = add_op(*copy, "Relu", {a_copy}, "extra");
    copy->set_output(0, extra->output(0));
    copy->erase(iff_copy);
    copy->node_list().at(0)->set_attribute(ir::attribute::make_int("marker", 1));
    copy->set_initializer(copy->find_value("w"), ir::tensor::from_values<float>("w", {2}, {9.0f, 9.0f}));
    copy->compact();

    CHECK(node_names(g) == names_before);
    CHECK(g.find_value("renamed") == nullptr);
    CHECK(g.find_value("a_out") == a_out);
    CHECK(a_out->name() == "a_out");
    CHECK(g.outputs()[0] == iff->output(0));
    CHECK_FALSE(iff->is_dead());
    CHECK(a_out->uses() == uses({{then_node, 0}, {else_node, 0}}));
    CHECK(a->attributes().empty());
    CHECK(w->initializer()->values<float>() == std::vector<float>{0.5f, -1.5f});
    CHECK(iff->subgraphs()[0]->node_count() == 1);
  }

  SECTION("erasing the If node drops the uses its subgraphs made, in that graph only") {
    g.remove_output(0);
    g.erase(iff);
    CHECK_FALSE(a_out->has_uses());
    CHECK(a_copy->uses().size() == 2);
    g.compact();
    CHECK(g.node_list() == std::vector<ir::node*>{a});
  }

  CHECK(use_list_problem(g).empty());
  CHECK(use_list_problem(*copy).empty());
}

TEST_CASE("unique_name never returns a name in use here, above or below", "[ir][graph]") {
  ir::graph g("main");
  g.add_input("x", float_type({2}));
  g.add_input("x_1", float_type({2}));
  ir::value* t = g.add_input("t", float_type({2}));
  ir::node* iff = add_if(g, add_bool_input(g, "cond"), t, "iff");
  ir::graph& then_branch = *iff->subgraphs()[0];

  auto all_names = [&] {
    std::set<std::string> names = value_names(g);
    for (ir::graph* sub : iff->subgraphs()) {
      for (const std::string& n : value_names(*sub)) names.insert(n);
    }
    return names;
  };

  SECTION("names of this graph, including ones a counter would produce") {
    const std::string fresh = g.unique_name("x");
    CHECK_FALSE(all_names().count(fresh));
    CHECK(fresh.rfind("x", 0) == 0);
  }

  SECTION("names defined inside a subgraph") {
    CHECK(g.unique_name("iff_then_node_out") != "iff_then_node_out");
  }

  SECTION("names of the enclosing graph, asked from a subgraph") {
    CHECK(then_branch.unique_name("x") != "x");
    CHECK(then_branch.unique_name("t") != "t");
  }

  SECTION("a free name is returned as it is") {
    CHECK(g.unique_name("free") == "free");
    CHECK_FALSE(g.unique_name("").empty());
  }

  SECTION("names taken one after another stay distinct") {
    std::set<std::string> made;
    for (int k = 0; k < 50; ++k) {
      std::string name = g.unique_name(k % 2 ? "x" : "iff_else_node_out");
      CHECK_FALSE(all_names().count(name));
      g.add_input(name, float_type({2}));
      made.insert(name);
    }
    CHECK(made.size() == 50);
  }

  SECTION("an output left unnamed gets a fresh name") {
    ir::node* n = g.add_node(ir::node_spec{"Relu", {t}, {"", ""}, {}, "x", {}});
    CHECK_FALSE(n->output(0)->name().empty());
    CHECK(n->output(0)->name() != n->output(1)->name());
    CHECK(g.find_value(n->output(0)->name()) == n->output(0));
  }
}

TEST_CASE("trimming drops only the trailing omitted inputs, in subgraphs too") {
  ir::graph g("g");
  ir::value* x = g.add_input("x", float_type({4}));
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::node* clip = add_op(g, "Clip", {x, nullptr, nullptr}, "clip");
  ir::node* resize = add_op(g, "Resize", {x, nullptr, clip->output(0), nullptr}, "resize");
  ir::node* choice = add_if(g, cond, x, "choice");
  ir::node* inner = *choice->subgraphs().front()->nodes().begin();
  choice->subgraphs().front()->set_input(inner, 2, nullptr);  // Identity(x, "", "")
  ir::trim_omitted_inputs(g);
  CHECK(clip->inputs().size() == 1);
  REQUIRE(resize->inputs().size() == 3);  // the omitted roi before scales stays
  CHECK(resize->input(1) == nullptr);
  CHECK(inner->inputs().size() == 1);
  CHECK(use_list_problem(g).empty());
}
