// remove-unused: drops initializers nothing reads and value_info entries naming no value.
//
// No numeric check against runtime/: only data nothing reads and descriptive entries go.

#include "inferopt/pass/cleanup/remove_unused.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

pass_record run(ir::model& m) {
  run_report r = test::run_cleanups(m, "remove-unused");
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

/// `y = Add(x, w)` with a used constant `w`.
struct adder {
  ir::model m = ir::make_model("unused");
  ir::value* x = nullptr;
  ir::value* w = nullptr;
  adder() {
    x = m.graph().add_input("x", test::float_type({2}));
    w = ir::graph_builder(m.graph()).constant("w", {2}, {1.0f, 2.0f});
    ir::node* add = test::add_op(m.graph(), "Add", {x, w}, "add", {"y"});
    m.graph().add_output(add->output(0));
  }
  ir::value* constant(const std::string& name) {
    return ir::graph_builder(m.graph()).constant(name, {2}, {3.0f, 4.0f});
  }
};

std::vector<std::string> initializer_names(const ir::graph& g) {
  std::vector<std::string> out;
  for (ir::value* v : g.initializers()) out.push_back(v->name());
  return out;
}

std::vector<std::string> input_names(const ir::graph& g) {
  std::vector<std::string> out;
  for (ir::value* v : g.inputs()) out.push_back(v->name());
  return out;
}

// ---- a hand-encoded ModelProto, to get value_info entries that name no value ------------
// (the IR only keeps such entries from files; the protobuf schema is not linked here)

std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string field(int number, const std::string& payload) {
  return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}
std::string field(int number, std::uint64_t v) { return varint(static_cast<std::uint64_t>(number) << 3) + varint(v); }

/// ValueInfoProto{name, type: float tensor}.
std::string value_info(const std::string& name) {
  const std::string tensor_type = field(1, std::uint64_t{1});  // elem_type = FLOAT
  return field(1, name) + field(2, field(1, tensor_type));
}
/// NodeProto{input, output, op_type}.
std::string node(const std::string& op, const std::string& in, const std::string& out) {
  return field(1, in) + field(2, out) + field(4, op);
}

/// `x -> Relu -> h -> Neg -> y`, with value_info for `h` (live) and for `ghost` (names nothing).
std::string model_with_stray_value_info() {
  std::string graph = field(1, node("Relu", "x", "h")) + field(1, node("Neg", "h", "y")) + field(2, std::string("g")) +
                      field(11, value_info("x")) + field(12, value_info("y")) + field(13, value_info("h")) +
                      field(13, value_info("ghost"));
  std::string opset = field(1, std::string()) + field(2, std::uint64_t{13});
  return field(1, std::uint64_t{8}) + field(7, graph) + field(8, opset);
}

}  // namespace

TEST_CASE("remove-unused drops initializers nothing reads", "[pass][remove-unused]") {
  adder a;
  a.constant("unused_a");
  a.constant("unused_b");
  pass_record r = run(a.m);
  CHECK(r.changed);
  CHECK(r.rewrites == 2);
  CHECK(r.counters.at("initializers-removed") == 2);
  CHECK(r.counters.at("value-info-removed") == 0);
  CHECK(initializer_names(a.m.graph()) == std::vector<std::string>{"w"});
  CHECK(a.m.graph().find_value("unused_a") == nullptr);
}

TEST_CASE("remove-unused drops an unused weight listed as a graph input, input and all", "[pass][remove-unused]") {
  // IR < 4 style: every weight is also a graph input with a default value.
  adder a;
  ir::value* old_weight = a.m.graph().add_input("old_weight", test::float_type({2}));
  a.m.graph().set_initializer(old_weight, ir::tensor::from_values<float>("", {2}, std::vector<float>{5, 6}));
  pass_record r = run(a.m);
  CHECK(r.counters.at("initializers-removed") == 1);
  CHECK(input_names(a.m.graph()) == std::vector<std::string>{"x"});
  CHECK(initializer_names(a.m.graph()) == std::vector<std::string>{"w"});
}

TEST_CASE("remove-unused drops stray value_info entries and keeps those of live values", "[pass][remove-unused]") {
  ir::model m = ir::parse_model(model_with_stray_value_info());
  REQUIRE(ir::has_stray_value_info(m.graph()));
  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(r.counters.at("value-info-removed") == 1);
  CHECK(r.counters.at("initializers-removed") == 0);
  CHECK_FALSE(ir::has_stray_value_info(m.graph()));
  // `h` keeps its entry: its type survives a save and reload.
  ir::model reloaded = ir::parse_model(test::bytes_of(m));
  ir::value* h = reloaded.graph().find_value("h");
  REQUIRE(h != nullptr);
  CHECK(h->elem_type() == ir::data_type::float32);
  CHECK_FALSE(ir::has_stray_value_info(reloaded.graph()));
}

TEST_CASE("remove-unused keeps what is read or part of the model's interface", "[pass][remove-unused]") {
  adder a;
  ir::graph& g = a.m.graph();
  SECTION("an initializer that is a graph output") { g.add_output(a.constant("exported")); }
  SECTION("a plain graph input nobody reads") { g.add_input("spare", test::float_type({2})); }
  SECTION("an initializer read only inside a subgraph") {
    ir::value* inner_w = a.constant("inner_w");
    ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    ir::node* n = test::add_if_with_identities(g, cond, inner_w, "if");
    g.add_output(n->output(0));
  }
  SECTION("an initializer read after an omitted input") {
    ir::value* v = a.constant("clip_max");
    ir::node* clip = test::add_op(g, "Clip", {a.x, nullptr, v}, "clip");
    g.add_output(clip->output(0));
  }
  require_declined(a.m);
}

TEST_CASE("remove-unused run twice gives the same graph as run once", "[pass][remove-unused]") {
  ir::model m = ir::make_default_model();
  REQUIRE(m.graph().find_value("unused_weights") != nullptr);
  // The dead branch's weights stay: the dead Conv still reads them until dce runs.
  pass_record first = run(m);
  CHECK(first.changed);
  CHECK(m.graph().find_value("unused_weights") == nullptr);
  const std::string once = test::bytes_of(m);
  pass_record second = run(m);
  CHECK_FALSE(second.changed);
  CHECK(test::bytes_of(m) == once);
}
