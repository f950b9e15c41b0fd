// ir::own_constant_input, replace_constant_input and forward_constant: editing a constant for
// one reader when exporters share it between several.

#include "inferopt/ir/rewriting.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

/// `x + w -> first`, `x * w -> second`: one constant, two readers.
struct shared_constant {
  ir::model m = ir::make_model("shared");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::value* w = ir::graph_builder(g).constant("w", {2}, {1.0f, 2.0f});
  ir::node* first = test::add_op(g, "Add", {x, w}, "first");
  ir::node* second = test::add_op(g, "Mul", {x, w}, "second");

  shared_constant() {
    g.add_output(first->output(0));
    g.add_output(second->output(0));
  }
};

ir::tensor values(std::vector<float> v) {
  const auto size = static_cast<std::int64_t>(v.size());
  return ir::tensor::from_values<float>("", {size}, v);
}

}  // namespace

TEST_CASE("own_constant_input copies a constant another node reads and keeps a sole reader's",
          "[pass][shared-constant]") {
  shared_constant t;
  ir::value* own = ir::own_constant_input(t.g, t.second, 1);
  CHECK(own != t.w);
  CHECK(t.second->input(1) == own);
  CHECK(t.first->input(1) == t.w);
  CHECK(own->initializer()->bytes == t.w->initializer()->bytes);  // no data copied
  CHECK(own->name() != t.w->name());
  // Now each has its own: asking again copies nothing.
  CHECK(ir::own_constant_input(t.g, t.second, 1) == own);
  CHECK(ir::own_constant_input(t.g, t.first, 1) == t.w);
  CHECK(ir::find_problems(t.g).empty());
}

TEST_CASE("own_constant_input copies a constant that is also a graph output or read twice by the node",
          "[pass][shared-constant]") {
  shared_constant t;
  SECTION("a graph output") {
    t.g.remove_output(1);
    t.g.erase(t.second);
    t.g.add_output(t.w);
    CHECK(ir::own_constant_input(t.g, t.first, 1) != t.w);
  }
  SECTION("two slots of one node") {
    ir::node* square = test::add_op(t.g, "Mul", {t.w, t.w}, "square");
    t.g.add_output(square->output(0));
    CHECK(ir::own_constant_input(t.g, square, 0) != t.w);
    CHECK(square->input(1) == t.w);
  }
}

TEST_CASE("replace_constant_input edits a shared constant for one reader only", "[pass][shared-constant]") {
  shared_constant t;
  ir::value* v = ir::replace_constant_input(t.g, t.second, 1, values({5.0f, 6.0f, 7.0f}));
  CHECK(t.w->initializer()->values<float>() == std::vector<float>{1.0f, 2.0f});
  CHECK(v->initializer()->values<float>() == std::vector<float>{5.0f, 6.0f, 7.0f});
  CHECK(v->type() == test::float_type({3}));  // the type follows the data

  // The last reader edits in place: the constant keeps its name.
  ir::value* in_place = ir::replace_constant_input(t.g, t.first, 1, values({9.0f, 9.0f}));
  CHECK(in_place == t.w);
  CHECK(t.w->name() == "w");
  CHECK(t.w->initializer()->values<float>() == std::vector<float>{9.0f, 9.0f});
  CHECK(ir::find_problems(t.g).empty());
}

TEST_CASE("forward_constant points an Identity's readers at the constant, or a copy for a graph output",
          "[pass][shared-constant]") {
  shared_constant t;
  ir::node* id = test::add_op(t.g, "Identity", {t.w}, "id");
  ir::node* neg = test::add_op(t.g, "Neg", {id->output(0)}, "neg");
  t.g.add_output(neg->output(0));
  REQUIRE(ir::is_identity_of_constant(*id, t.m.ir_version));
  CHECK_FALSE(ir::is_identity_of_constant(*neg, t.m.ir_version));

  SECTION("read by nodes only") {
    ir::forward_constant(t.g, id);
    CHECK(id->is_dead());
    CHECK(neg->input(0) == t.w);
    CHECK(t.g.initializers().size() == 1);
  }
  SECTION("also a graph output") {
    t.g.add_output(id->output(0));
    ir::forward_constant(t.g, id);
    CHECK(neg->input(0) == t.w);
    const ir::value* out = t.g.outputs().back();
    CHECK(out->name() == "id_out");
    CHECK(out->is_constant());
    CHECK(out->initializer()->bytes == t.w->initializer()->bytes);
  }
  t.g.compact();
  CHECK(ir::find_problems(t.g).empty());
}
