// The name allocator: fresh value and node names that no scope of the model holds, kept in
// sync by every graph mutation, in O(1) amortized per name; and the writer's guarantee that
// no graph is saved with two nodes of one name.

#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "test_graphs.hpp"
#include "test_protos.hpp"
#include "test_util.hpp"

using namespace inferopt;
using test::add_if;
using test::add_op;
using test::float_type;

namespace {

ir::value* add_bool_input(ir::graph& g, const std::string& name) {
  return g.add_input(name, ir::value_type{true, ir::data_type::boolean, ir::shape{}});
}

/// `x -> Relu (a) -> If (iff)`, whose branches read a_out.
struct nested_graph {
  ir::graph g{"main"};
  ir::value* x = g.add_input("x", float_type({2}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  ir::node* iff = add_if(g, add_bool_input(g, "cond"), a->output(0), "iff");
  ir::graph& then_branch = *iff->subgraphs()[0];
};

}  // namespace

TEST_CASE("name_counts keeps a name while any of its holders remains", "[ir][name-allocator]") {
  ir::name_counts names;
  names.add("conv");
  names.add("conv");
  names.remove("conv");
  CHECK(names.contains("conv"));
  names.remove("conv");
  CHECK_FALSE(names.contains("conv"));
}

TEST_CASE("name_stems hands out the stem, then suffixes it skips when taken", "[ir][name-allocator]") {
  ir::name_stems stems;
  const std::set<std::string> taken{"w", "w_2"};
  const auto is_taken = [&](std::string_view n) { return taken.count(std::string(n)) > 0; };
  CHECK(stems.fresh("w", is_taken) == "w_1");
  CHECK(stems.fresh("w", is_taken) == "w_3");
  CHECK(stems.fresh("b", is_taken) == "b");
  CHECK(stems.fresh("b", is_taken) == "b_1");
}

TEST_CASE("the allocator's value names avoid values here, above and below, but not node names",
          "[ir][name-allocator]") {
  nested_graph t;
  ir::name_allocator& names = t.g.names();

  SECTION("a value of this graph") { CHECK(names.value_name("a_out") == "a_out_1"); }
  SECTION("a value of a nested graph") {
    CHECK(names.is_defined_below("iff_then_node_out"));
    CHECK(names.value_name("iff_then_node_out") == "iff_then_node_out_1");
  }
  SECTION("a value of the enclosing graph, asked from a branch") {
    CHECK(t.then_branch.names().value_name("x") == "x_1");
  }
  SECTION("a sibling branch's value, asked from a branch") {
    CHECK(t.then_branch.names().value_name("iff_else_node_out") == "iff_else_node_out");
  }
  SECTION("a node name is not a value name") { CHECK(names.value_name("a") == "a"); }
  SECTION("an empty stem") { CHECK_FALSE(names.value_name("").empty()); }
}

TEST_CASE("the allocator's node names avoid the nodes of their graph only", "[ir][name-allocator]") {
  nested_graph t;
  CHECK(t.g.names().node_name("a") == "a_1");
  CHECK(t.g.names().node_name("a_out") == "a_out");  // a value name is not a node name
  CHECK(t.then_branch.names().node_name("a") == "a");  // onnxruntime checks one graph at a time
  CHECK(t.g.names().node_name("iff_then_node") == "iff_then_node");
}

TEST_CASE("add_node gives a node whose name another node has a fresh one", "[ir][name-allocator]") {
  nested_graph t;
  ir::node* again = add_op(t.g, "Neg", {t.x}, "neg");
  ir::node* twin = t.g.add_node(ir::node_spec{"Neg", {t.x}, {""}, {}, "neg", {}});
  ir::node* unnamed = t.g.add_node(ir::node_spec{"Neg", {t.x}, {""}, {}, "", {}});
  CHECK(again->name() == "neg");
  CHECK(twin->name() == "neg_1");
  CHECK(unnamed->name().empty());
}

TEST_CASE("the allocator follows renames, erasures and subgraph changes", "[ir][name-allocator]") {
  nested_graph t;
  ir::name_allocator& names = t.g.names();

  SECTION("a renamed value frees its old name and takes the new one") {
    t.g.rename(t.x, "input");
    CHECK_FALSE(names.is_value_name_taken("x"));
    CHECK(names.is_value_name_taken("input"));
    CHECK(t.then_branch.names().is_value_name_taken("input"));
  }
  SECTION("an erased node frees its name and its outputs' names") {
    ir::node* neg = add_op(t.g, "Neg", {t.x}, "neg");
    t.g.erase(neg);
    CHECK_FALSE(names.is_node_name_taken("neg"));
    CHECK_FALSE(names.is_value_name_taken("neg_out"));
    CHECK(names.node_name("neg") == "neg");
  }
  SECTION("a renamed node frees its old name") {
    t.a->set_name("first");
    CHECK_FALSE(names.is_node_name_taken("a"));
    CHECK(names.is_node_name_taken("first"));
  }
  SECTION("erasing an If forgets the values of its branches") {
    t.g.erase(t.iff);
    CHECK_FALSE(names.is_defined_below("iff_then_node_out"));
    t.g.compact();  // destroying the detached branches must not count them out twice
    CHECK_FALSE(names.is_value_name_taken("iff_else_node_out"));
    CHECK(names.is_value_name_taken("a_out"));
  }
  SECTION("a branch destroyed while its If lives takes its values out") {
    t.iff->attributes().clear();
    CHECK_FALSE(names.is_defined_below("iff_then_node_out"));
  }
  SECTION("values added inside a branch count below") {
    t.then_branch.add_initializer("deep", ir::tensor::from_values<float>("", {1}, {1.0f}));
    CHECK(names.is_defined_below("deep"));
    CHECK(names.value_name("deep") == "deep_1");
  }
  SECTION("a clone knows the same names and continues the same stems") {
    CHECK(names.value_name("x") == "x_1");
    std::unique_ptr<ir::graph> copy = t.g.clone();
    CHECK(copy->names().is_defined_below("iff_then_node_out"));
    CHECK(copy->names().is_node_name_taken("a"));
    CHECK(copy->names().value_name("x") == "x_2");
    CHECK(names.value_name("x") == "x_2");
  }
}

TEST_CASE("fresh names stay O(1) amortized on a large graph with subgraphs", "[ir][name-allocator]") {
  // The old search walked every node of the graph per candidate, quadratic in all. The
  // bound is generous so that a loaded machine never fails it; quadratic work would.
  nested_graph t;
  ir::value* v = t.x;
  constexpr int count = 40000;
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> made;
  for (int k = 0; k < count; ++k) {
    v = t.g.add_node(ir::node_spec{"Neg", {v}, {t.g.unique_name("x")}, {}, "neg", {}})->output(0);
    made.insert(v->name());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(made.size() == count);
  CHECK(t.g.node_count() == count + 2);
  CHECK_FALSE(t.g.names().is_node_name_taken("neg_" + std::to_string(count)));
  CHECK(t.g.names().is_node_name_taken("neg_" + std::to_string(count - 1)));
  CHECK(seconds < 5.0);
}

TEST_CASE("a model loaded with repeated node names keeps them and is saved with distinct ones",
          "[ir][name-allocator]") {
  onnx::ModelProto proto = test::relu_model_proto();
  onnx::GraphProto& gp = *proto.mutable_graph();
  gp.mutable_output(0)->set_name("z");
  test::add_node(gp, "Relu", {"y"}, {"relu_1"}, "relu");  // a value already named like a fresh node
  test::add_node(gp, "Relu", {"relu_1"}, {"z"}, "relu");
  ir::model m = ir::parse_model(test::bytes_of(proto));
  std::vector<std::string> loaded;
  for (const ir::node* n : m.graph().nodes()) loaded.push_back(n->name());
  CHECK(loaded == std::vector<std::string>{"relu", "relu", "relu"});

  SECTION("a node added afterwards takes a name none of them has") {
    ir::node* extra = m.graph().add_node(ir::node_spec{"Neg", {m.graph().inputs()[0]}, {""}, {}, "relu", {}});
    CHECK(extra->name() == "relu_1");
  }

  SECTION("the saved file names every node differently") {
    onnx::ModelProto saved;
    REQUIRE(saved.ParseFromString(ir::serialize_model(m)));
    std::vector<std::string> written;
    for (const onnx::NodeProto& n : saved.graph().node()) written.push_back(n.name());
    CHECK(written == std::vector<std::string>{"relu", "relu_1", "relu_2"});
  }
}
