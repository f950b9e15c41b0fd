// The structural verifier: silent on well-formed graphs, and one line naming the node for
// each kind of broken graph.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "test_graphs.hpp"
#include "test_protos.hpp"
#include "test_util.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;
using test::add_if;
using test::add_op;
using test::error_from;
using test::float_type;

namespace {

using problem_list = std::vector<std::string>;

ir::value* add_bool_input(ir::graph& g, const std::string& name) {
  return g.add_input(name, ir::value_type{true, ir::data_type::boolean, ir::shape{}});
}

/// `verify` throws the first problem `find_problems` reports, as one line.
void check_verify_reports(const ir::graph& g, const problem_list& problems) {
  REQUIRE_FALSE(problems.empty());
  auto e = error_from([&] { ir::verify(g); });
  REQUIRE(e);
  CHECK(e->code() == errc::verification);
  CHECK(std::string(e->what()) == problems.front());
  for (const std::string& p : problems) CHECK(p.find('\n') == std::string::npos);
}

/// An If node `name` whose branch `then` is `Identity(then_input)` and `else` is
/// `Identity(x)`, as a file would hold it.
onnx::NodeProto& add_if_proto(onnx::GraphProto& g, const std::string& name, const std::string& then_input) {
  onnx::NodeProto& n = test::add_node(g, "If", {"cond"}, {name + "_out"}, name);
  const char* branches[] = {"then_branch", "else_branch"};
  for (const char* branch : branches) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(branch);
    a.set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& sub = *a.mutable_g();
    const std::string prefix = std::string(branch) == "then_branch" ? "then" : "else";
    sub.set_name(prefix);
    test::add_node(sub, "Identity", {prefix == "then" ? then_input : "x"}, {prefix + "_out"}, prefix + "_node");
    test::set_float_info(*sub.add_output(), prefix + "_out", {1, 4});
  }
  return n;
}

}  // namespace

TEST_CASE("find_problems finds nothing in built graphs, sample models and sorted files", "[ir][verify]") {
  SECTION("a graph using every op the builder makes") {
    ir::model m = ir::make_model("built");
    ir::graph_builder b(m.graph(), 3);
    ir::value* x = b.input("x", ir::data_type::float32, {1, 4, 16, 16});
    ir::value* y = b.relu(b.batch_norm(b.conv(x, 8)));
    y = b.concat({b.max_pool(y), b.average_pool(y)}, 1);
    y = b.leaky_relu(b.mul(y, b.sigmoid(y)));
    y = b.clip(b.dropout(b.tanh(y)), -1.0f, 1.0f);
    y = b.flatten(b.global_average_pool(b.identity(y)));
    y = b.reshape(b.dense(b.gemm(y, 12), 6), {2, 3});
    b.output(y);
    CHECK(ir::find_problems(m.graph()) == problem_list{});
    CHECK_NOTHROW(ir::verify(m.graph()));
  }

  SECTION("the default sample model") {
    ir::model m = ir::make_default_model();
    CHECK(ir::find_problems(m.graph()) == problem_list{});
  }

  SECTION("a narrow ResNet-50") {
    ir::model m = ir::make_resnet50(1, 8);
    CHECK(ir::find_problems(m.graph()) == problem_list{});
  }

  SECTION("a graph whose If branches read an outer value made before the If") {
    ir::graph g("main");
    ir::value* x = g.add_input("x", float_type({2}));
    ir::node* p = add_op(g, "Relu", {x}, "p");
    ir::node* iff = add_if(g, add_bool_input(g, "cond"), p->output(0), "iff");
    g.add_output(iff->output(0));
    CHECK(ir::find_problems(g) == problem_list{});
  }

  SECTION("a file whose nodes are stored in reverse order") {
    onnx::ModelProto mp = test::relu_model_proto();
    onnx::GraphProto& gp = *mp.mutable_graph();
    gp.mutable_output(0)->set_name("z");
    test::add_node(gp, "Neg", {"y"}, {"z"}, "neg");
    gp.mutable_node()->SwapElements(0, 1);
    ir::model m = ir::parse_model(test::bytes_of(mp));
    CHECK(m.graph().node_list().front()->name() == "relu");
    CHECK(ir::find_problems(m.graph()) == problem_list{});
  }
}

TEST_CASE("find_problems reports an input that names no value, naming the node", "[ir][verify]") {
  SECTION("a file whose node reads a name nothing defines") {
    onnx::ModelProto mp = test::relu_model_proto();
    test::add_node(*mp.mutable_graph(), "Add", {"y", "ghost"}, {"z"}, "add");
    ir::model m = ir::parse_model(test::bytes_of(mp));
    problem_list problems = ir::find_problems(m.graph());
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Contains("'add'") && Contains("'ghost'") && Contains("not defined"));
    check_verify_reports(m.graph(), problems);
  }

  SECTION("a file whose subgraph reads a name no enclosing graph defines") {
    onnx::ModelProto mp = test::relu_model_proto();
    test::set_float_info(*mp.mutable_graph()->add_input(), "cond", {});
    add_if_proto(*mp.mutable_graph(), "iff", "ghost");
    ir::model m = ir::parse_model(test::bytes_of(mp));
    problem_list problems = ir::find_problems(m.graph());
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Contains("subgraph 'then'") && Contains("'then_node'") && Contains("'ghost'"));
    check_verify_reports(m.graph(), problems);
  }

  SECTION("a node reading a value of an unrelated graph") {
    ir::graph other("other");
    ir::value* foreign = other.add_input("foreign", float_type({2}));
    ir::graph g("main");
    g.add_input("x", float_type({2}));
    add_op(g, "Relu", {foreign}, "r");
    problem_list problems = ir::find_problems(g);
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Contains("'r'") && Contains("'foreign'"));
    check_verify_reports(g, problems);
  }
}

TEST_CASE("find_problems reports a node that runs before the producer of its input", "[ir][verify]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::node* a = add_op(g, "Relu", {x}, "a");
  ir::node* b = add_op(g, "Neg", {a->output(0)}, "b");
  g.add_output(b->output(0));
  REQUIRE(ir::find_problems(g).empty());

  g.move_before(b, a);
  problem_list problems = ir::find_problems(g);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Contains("'b'") && Contains("'a_out'") && Contains("topological order"));
  check_verify_reports(g, problems);

  g.sort_topologically();
  CHECK(ir::find_problems(g) == problem_list{});
}

TEST_CASE("find_problems reports a graph output that is not defined", "[ir][verify]") {
  SECTION("a file whose graph output names nothing") {
    onnx::ModelProto mp = test::relu_model_proto();
    test::set_float_info(*mp.mutable_graph()->add_output(), "nowhere", {1});
    ir::model m = ir::parse_model(test::bytes_of(mp));
    problem_list problems = ir::find_problems(m.graph());
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Contains("graph output 'nowhere' is not defined"));
    check_verify_reports(m.graph(), problems);
  }

  SECTION("a graph output taken from an unrelated graph") {
    ir::graph other("other");
    ir::value* foreign = other.add_input("foreign", float_type({2}));
    ir::graph g("main");
    g.add_output(foreign);
    problem_list problems = ir::find_problems(g);
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Contains("graph output 'foreign' is not defined"));
    g.remove_output(0);
  }
}

TEST_CASE("find_problems reports a subgraph reading an outer value produced after its node", "[ir][verify]") {
  ir::graph g("main");
  ir::value* x = g.add_input("x", float_type({2}));
  ir::value* cond = add_bool_input(g, "cond");
  ir::node* p = add_op(g, "Relu", {x}, "p");
  ir::node* holder = nullptr;
  std::string reader;

  SECTION("read by a branch of the If itself") {
    holder = add_if(g, cond, p->output(0), "iff");
    reader = "'iff_then_node'";
  }

  SECTION("read two levels down, by a branch of an If inside a branch") {
    auto outer_then = std::make_unique<ir::graph>("outer_then");
    ir::node* inner = add_if(*outer_then, cond, p->output(0), "inner");
    outer_then->add_output(inner->output(0));
    std::vector<ir::attribute> attrs;
    attrs.push_back(test::graph_attribute("then_branch", std::move(outer_then)));
    attrs.push_back(test::graph_attribute("else_branch", test::branch("outer_else", "Identity", x)));
    holder = g.add_node(ir::node_spec{"If", {cond}, {"outer_out"}, std::move(attrs), "outer", {}});
    reader = "'inner_then_node'";
  }

  g.add_output(holder->output(0));
  REQUIRE(ir::find_problems(g) == problem_list{});

  g.move_before(holder, p);
  problem_list problems = ir::find_problems(g);
  CAPTURE(problems);
  REQUIRE_FALSE(problems.empty());
  CHECK_THAT(problems[0], Contains(reader) && Contains("'p_out'") && Contains("produced after"));
  check_verify_reports(g, problems);

  g.sort_topologically();
  CHECK(ir::find_problems(g) == problem_list{});
}
