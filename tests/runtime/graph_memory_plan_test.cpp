// plan_graph_memory: lifetimes and sizes taken from an ir graph, in-place hints, graph
// inputs/outputs, values of unknown size, subgraph reads, and valid plans for the light models.

#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"
#include "ir/test_graphs.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

ir::value_type float_type(std::vector<std::int64_t> dims) {
  return ir::value_type{true, ir::data_type::float32, ir::shape(dims.begin(), dims.end())};
}

/// Adds `out = op(inputs)` with a float output of `dims` (no dims: type left unknown).
ir::value* op(ir::graph& g, const std::string& op_type, std::vector<ir::value*> inputs, const std::string& out,
              std::optional<std::vector<std::int64_t>> dims) {
  ir::node* n = g.add_node(ir::node_spec{op_type, std::move(inputs), {out}, {}, out + "_node", {}});
  if (dims) n->output(0)->set_type(float_type(*dims));
  return n->output(0);
}

/// The index of the planned value `name`; fails the test when it was not planned.
std::size_t index_of(const runtime::graph_memory_plan& p, const std::string& name) {
  auto it = std::find(p.names.begin(), p.names.end(), name);
  REQUIRE(it != p.names.end());
  return static_cast<std::size_t>(it - p.names.begin());
}

std::pair<std::size_t, std::size_t> lifetime(const runtime::graph_memory_plan& p, const std::string& name) {
  const auto& t = p.tensors[index_of(p, name)];
  return {t.first_use, t.last_use};
}

/// x -> a(256 B) -> b(128 B), c(64 B) -> d = Concat(b, c) (192 B) -> y. No op of the in-place
/// list, so the numbers are the planner's alone.
///   step 0: a            256 live
///   step 1: a b          384
///   step 2: a b c        448  <- lower bound
///   step 3: b c d        384
///   step 4: d            192
void diamond(ir::graph& g) {
  ir::value* x = g.add_input("x", float_type({16}));
  ir::value* a = op(g, "Conv", {x}, "a", std::vector<std::int64_t>{64});
  ir::value* b = op(g, "Conv", {a}, "b", std::vector<std::int64_t>{32});
  ir::value* c = op(g, "Conv", {a}, "c", std::vector<std::int64_t>{16});
  ir::value* d = op(g, "Concat", {b, c}, "d", std::vector<std::int64_t>{48});
  g.add_output(op(g, "Conv", {d}, "y", std::vector<std::int64_t>{16}));
}

}  // namespace

TEST_CASE("plan_graph_memory takes lifetimes and sizes from the graph", "[runtime][graph-memory-plan]") {
  ir::graph g("diamond");
  diamond(g);
  const runtime::graph_memory_plan p = runtime::plan_graph_memory(g);

  CHECK(p.steps == 5);
  CHECK(p.names == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(lifetime(p, "a") == std::pair<std::size_t, std::size_t>{0, 2});
  CHECK(lifetime(p, "b") == std::pair<std::size_t, std::size_t>{1, 3});
  CHECK(lifetime(p, "c") == std::pair<std::size_t, std::size_t>{2, 3});
  CHECK(lifetime(p, "d") == std::pair<std::size_t, std::size_t>{3, 4});
  CHECK(p.tensors[index_of(p, "d")].size == 192);
  CHECK(p.plan.naive_bytes == 640);
  CHECK(p.plan.lower_bound_bytes == 448);
  // a at 0, d over a's bytes once a is dead, b above a, c above b.
  CHECK(p.plan.arena_bytes == 448);
  CHECK(p.plan.offsets == std::vector<std::size_t>{0, 256, 384, 0});
  CHECK(p.plan.in_place_count == 0);
  CHECK(p.unknown_size.empty());
  CHECK(runtime::check_graph_memory_plan(p).empty());

  SECTION("sizes round up to the alignment") {
    const auto q = runtime::plan_graph_memory(g, {.alignment = 512});
    CHECK(q.plan.naive_bytes == 4 * 512);
    CHECK(q.plan.lower_bound_bytes == 3 * 512);
    CHECK(runtime::check_graph_memory_plan(q).empty());
  }
  SECTION("the check names the values of a broken plan") {
    runtime::graph_memory_plan broken = p;
    broken.plan.offsets[index_of(p, "b")] = 0;  // over a and d, while each is live with b
    CHECK(runtime::check_graph_memory_plan(broken) ==
          std::vector<std::string>{"'a' and 'b' are live together and overlap in memory",
                                   "'b' and 'd' are live together and overlap in memory"});
  }
  SECTION("an alignment that is not a power of two is refused") {
    CHECK_THROWS_AS(runtime::plan_graph_memory(g, {.alignment = 48}), inferopt::error);
  }
}

TEST_CASE("plan_graph_memory writes an elementwise output over an input that dies there",
          "[runtime][graph-memory-plan]") {
  ir::graph g("relu");
  ir::value* x = g.add_input("x", float_type({64}));
  ir::value* a = op(g, "Conv", {x}, "a", std::vector<std::int64_t>{64});  // 256 B
  ir::value* r = op(g, "Relu", {a}, "r", std::vector<std::int64_t>{64});

  SECTION("the input dies at the Relu: the output takes its bytes and the arena shrinks") {
    g.add_output(op(g, "Conv", {r}, "y", std::vector<std::int64_t>{4}));
    const auto p = runtime::plan_graph_memory(g);
    const std::size_t ri = index_of(p, "r");
    CHECK(p.tensors[ri].may_alias_input_of == index_of(p, "a"));
    CHECK(p.plan.in_place[ri]);
    CHECK(p.plan.in_place_count == 1);
    CHECK(p.plan.offsets[ri] == p.plan.offsets[index_of(p, "a")]);
    CHECK(p.plan.arena_bytes == 256);
    CHECK(p.plan.lower_bound_bytes == 512);  // the bound ignores in-place reuse
    CHECK(runtime::check_graph_memory_plan(p).empty());

    const auto without = runtime::plan_graph_memory(g, {.in_place = false});
    CHECK_FALSE(without.tensors[ri].may_alias_input_of);
    CHECK(without.plan.in_place_count == 0);
    CHECK(without.plan.arena_bytes == 512);
  }
  SECTION("the input is read again later: no hint, both get their own bytes") {
    g.add_output(op(g, "Add", {r, a}, "y", std::vector<std::int64_t>{64}));
    const auto p = runtime::plan_graph_memory(g);
    CHECK(lifetime(p, "a") == std::pair<std::size_t, std::size_t>{0, 2});
    CHECK_FALSE(p.tensors[index_of(p, "r")].may_alias_input_of);
    CHECK(p.plan.in_place_count == 0);
    CHECK(p.plan.arena_bytes == 512);
    CHECK(runtime::check_graph_memory_plan(p).empty());
  }
  SECTION("a broadcasting Add takes the input of its own size, not the smaller one") {
    ir::value* bias = op(g, "Conv", {x}, "bias", std::vector<std::int64_t>{1});
    ir::value* s = op(g, "Add", {bias, r}, "s", std::vector<std::int64_t>{64});
    g.add_output(op(g, "Conv", {s}, "y", std::vector<std::int64_t>{4}));
    const auto p = runtime::plan_graph_memory(g);
    CHECK(p.tensors[index_of(p, "s")].may_alias_input_of == index_of(p, "r"));
    CHECK(p.plan.in_place[index_of(p, "s")]);
    CHECK(runtime::check_graph_memory_plan(p).empty());
  }
  SECTION("a Cast to another element size is not in place") {
    ir::node* cast = g.add_node(ir::node_spec{"Cast", {r}, {"h"}, {}, "cast", {}});
    cast->output(0)->set_type(ir::value_type{true, ir::data_type::float16, ir::shape{64}});
    g.add_output(op(g, "Conv", {cast->output(0)}, "y", std::vector<std::int64_t>{4}));
    const auto p = runtime::plan_graph_memory(g);
    CHECK_FALSE(p.tensors[index_of(p, "h")].may_alias_input_of);
    CHECK(p.tensors[index_of(p, "r")].may_alias_input_of == index_of(p, "a"));
  }
}

TEST_CASE("in_place_inputs names the reusable input slots of listed ops only", "[runtime][graph-memory-plan]") {
  ir::graph g("ops");
  ir::value* x = g.add_input("x", float_type({4}));
  ir::value* y = g.add_input("y", float_type({4}));
  auto slots = [&](const std::string& op_type, std::vector<ir::value*> inputs, std::string domain = {}) {
    ir::node* n = g.add_node(ir::node_spec{op_type, std::move(inputs), {""}, {}, "", std::move(domain)});
    return runtime::in_place_inputs(*n);
  };
  CHECK(slots("Relu", {x}) == std::vector<std::size_t>{0});
  CHECK(slots("Clip", {x, y, y}) == std::vector<std::size_t>{0});
  CHECK(slots("Reshape", {x, y}) == std::vector<std::size_t>{0});
  CHECK(slots("Dropout", {x}) == std::vector<std::size_t>{0});
  CHECK(slots("Add", {x, y}) == std::vector<std::size_t>{0, 1});
  CHECK(slots("Sum", {x, y, x}) == std::vector<std::size_t>{0, 1, 2});
  CHECK(slots("Conv", {x, y}).empty());
  CHECK(slots("Softmax", {x}).empty());
  CHECK(slots("Relu", {x}, "com.example").empty());
}

TEST_CASE("plan_graph_memory leaves graph inputs and outputs out unless asked", "[runtime][graph-memory-plan]") {
  // x -> a (also a graph output) -> b -> y (graph output)
  ir::graph g("io");
  ir::value* x = g.add_input("x", float_type({16}));
  ir::value* a = op(g, "Conv", {x}, "a", std::vector<std::int64_t>{16});
  ir::value* b = op(g, "Conv", {a}, "b", std::vector<std::int64_t>{16});
  g.add_output(a);
  g.add_output(op(g, "Conv", {b}, "y", std::vector<std::int64_t>{16}));

  SECTION("by default only intermediates") {
    const auto p = runtime::plan_graph_memory(g);
    CHECK(p.names == std::vector<std::string>{"b"});
    CHECK(lifetime(p, "b") == std::pair<std::size_t, std::size_t>{1, 2});
  }
  SECTION("inputs live from step 0 to their last reader") {
    const auto p = runtime::plan_graph_memory(g, {.include_graph_inputs = true});
    CHECK(p.names == std::vector<std::string>{"x", "b"});
    CHECK(lifetime(p, "x") == std::pair<std::size_t, std::size_t>{0, 0});
  }
  SECTION("outputs live to the last step, wherever they are made") {
    const auto p = runtime::plan_graph_memory(g, {.include_graph_outputs = true});
    CHECK(p.names == std::vector<std::string>{"a", "b", "y"});
    CHECK(lifetime(p, "a") == std::pair<std::size_t, std::size_t>{0, 2});
    CHECK(lifetime(p, "y") == std::pair<std::size_t, std::size_t>{2, 2});
    CHECK(runtime::check_graph_memory_plan(p).empty());
  }
  SECTION("an elementwise op never writes over a graph output") {
    ir::graph h("io_relu");
    ir::value* in = h.add_input("in", float_type({16}));
    ir::value* c = op(h, "Conv", {in}, "c", std::vector<std::int64_t>{16});
    h.add_output(c);
    h.add_output(op(h, "Relu", {c}, "r", std::vector<std::int64_t>{16}));
    const auto p = runtime::plan_graph_memory(h, {.include_graph_outputs = true});
    CHECK_FALSE(p.tensors[index_of(p, "r")].may_alias_input_of);
    CHECK(p.plan.in_place_count == 0);
  }
}

TEST_CASE("plan_graph_memory lists values of unknown size and plans the rest", "[runtime][graph-memory-plan]") {
  ir::graph g("dynamic");
  ir::value* x = g.add_input("x", float_type({16}));
  ir::value* a = op(g, "Conv", {x}, "a", std::vector<std::int64_t>{16});
  ir::value* untyped = op(g, "Conv", {a}, "untyped", std::nullopt);
  ir::value* symbolic = op(g, "Conv", {untyped}, "symbolic", std::nullopt);
  symbolic->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{ir::dim("batch"), 16}});
  ir::value* no_rank = op(g, "Conv", {symbolic}, "no_rank", std::nullopt);
  no_rank->set_type(ir::value_type{true, ir::data_type::float32, std::nullopt});
  ir::value* strings = op(g, "Conv", {no_rank}, "strings", std::nullopt);
  strings->set_type(ir::value_type{true, ir::data_type::string, ir::shape{4}});
  g.add_output(op(g, "Conv", {strings}, "y", std::nullopt));

  const auto p = runtime::plan_graph_memory(g);
  CHECK(p.names == std::vector<std::string>{"a"});
  CHECK(p.unknown_size == std::vector<std::string>{"untyped", "symbolic", "no_rank", "strings"});
  CHECK(p.steps == 6);
  CHECK(runtime::check_graph_memory_plan(p).empty());
}

TEST_CASE("a read from inside a subgraph keeps the value alive through the node that owns it",
          "[runtime][graph-memory-plan]") {
  // a: read by a node of the then branch. b: named as the else branch's output, which the IR
  // does not list as a use. Both must live to the If at step 2.
  ir::graph g("branches");
  ir::value* x = g.add_input("x", float_type({16}));
  ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
  ir::value* a = op(g, "Conv", {x}, "a", std::vector<std::int64_t>{16});
  ir::value* b = op(g, "Conv", {x}, "b", std::vector<std::int64_t>{16});
  auto else_branch = std::make_unique<ir::graph>("else");
  else_branch->add_output(b);
  std::vector<ir::attribute> attrs;
  attrs.push_back(test::graph_attribute("then_branch", test::branch("then", "Identity", a)));
  attrs.push_back(test::graph_attribute("else_branch", std::move(else_branch)));
  ir::node* iff = g.add_node(ir::node_spec{"If", {cond}, {"c"}, std::move(attrs), "iff", {}});
  iff->output(0)->set_type(float_type({16}));
  g.add_output(op(g, "Conv", {iff->output(0)}, "y", std::vector<std::int64_t>{16}));
  REQUIRE(ir::find_problems(g).empty());

  const auto p = runtime::plan_graph_memory(g);
  CHECK(p.names == std::vector<std::string>{"a", "b", "c"});  // b is an output of a branch, not of g
  CHECK(lifetime(p, "a") == std::pair<std::size_t, std::size_t>{0, 2});
  CHECK(lifetime(p, "b") == std::pair<std::size_t, std::size_t>{1, 2});
  CHECK(lifetime(p, "c") == std::pair<std::size_t, std::size_t>{2, 3});
  CHECK(runtime::check_graph_memory_plan(p).empty());
}

TEST_CASE("the light models after -O1 and shape inference get valid plans",
          "[runtime][graph-memory-plan][light-models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  const pass_registry registry = builtin_registry();
  for (const char* name : test::light_model_names) {
    CAPTURE(name);
    ir::model m = ir::load_model(*dir / ("light_" + std::string(name) + ".onnx"));
    pipeline o1 = level_pipeline(1, registry);
    (void)pass_manager{}.run(o1, m);
    REQUIRE(ir::infer_shapes(m).ran);
    for (bool in_place : {true, false}) {
      CAPTURE(in_place);
      const auto p = runtime::plan_graph_memory(m.graph(), {.in_place = in_place});
      CHECK(runtime::check_graph_memory_plan(p).empty());
      CHECK(p.unknown_size.empty());
      CHECK_FALSE(p.tensors.empty());
      CHECK(p.plan.arena_bytes <= p.plan.naive_bytes);
      if (!in_place) CHECK(p.plan.arena_bytes >= p.plan.lower_bound_bytes);
      if (in_place) {
        std::cout << "light_" << name << ": " << p.tensors.size() << " tensors, arena " << p.plan.arena_bytes
                  << " B, lower bound " << p.plan.lower_bound_bytes << " B, naive " << p.plan.naive_bytes
                  << " B, in place " << p.plan.in_place_count << "\n";
      }
    }
  }
}
