// residual-sum-before-norm: the Add a LayerNormalization reads becomes a Sum with the same
// numbers; Adds read elsewhere, or feeding other ops, stay Adds.

#include "inferopt/fusion/residual_sum_before_norm.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("residual-sum-before-norm");

struct block {
  ir::model model = ir::make_model("residual", 17);
  ir::value* sum = nullptr;
  ir::value* normed = nullptr;
};

/// LayerNormalization(Add(Add(x W, bias), skip)): a post-norm transformer's residual.
block residual_block() {
  block b;
  ir::graph_builder gb(b.model.graph());
  ir::value* x = gb.input("x", ir::data_type::float32, {2, 3, 8});
  ir::value* skip = gb.input("skip", ir::data_type::float32, {2, 3, 8});
  ir::value* projected = gb.add(gb.matmul(x, gb.random_constant("w", {8, 8}, 0.5f)), gb.random_constant("bias", {8}, 0.5f));
  b.sum = gb.add(projected, skip);
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("epsilon", 1e-5f));
  b.normed = gb.op("LayerNormalization", {b.sum, gb.random_constant("gamma", {8}, 1.0f), gb.random_constant("beta", {8}, 0.5f)},
                   std::move(attrs));
  return b;
}

}  // namespace

TEST_CASE("residual-sum-before-norm writes the Add a LayerNormalization reads as Sum, same numbers", "[fusion][residual-sum-before-norm]") {
  block b = residual_block();
  ir::graph_builder(b.model.graph()).output(b.normed);
  checker.run_and_compare(b.model);
  CHECK(test::count_ops(b.model.graph(), "Sum") == 1);
  CHECK(test::count_ops(b.model.graph(), "Add") == 1);  // the bias Add feeds the Sum, not the norm
  CHECK(b.sum->producer()->op_type() == "Sum");
}

TEST_CASE("residual-sum-before-norm leaves a sum that is read elsewhere or is a graph output", "[fusion][residual-sum-before-norm]") {
  SECTION("read by the next residual too (pre-norm blocks)") {
    block b = residual_block();
    ir::graph_builder gb(b.model.graph());
    gb.output(gb.add(b.normed, b.sum));
    CHECK(checker.require_declined(b.model).counters.at("declined-read-elsewhere") == 1);
  }
  SECTION("a graph output") {
    block b = residual_block();
    ir::graph_builder gb(b.model.graph());
    gb.output(b.normed);
    gb.output(b.sum);
    CHECK(checker.require_declined(b.model).counters.at("declined-read-elsewhere") == 1);
  }
}

TEST_CASE("residual-sum-before-norm leaves Adds that feed no LayerNormalization, and opsets before 8", "[fusion][residual-sum-before-norm]") {
  ir::model m = ir::make_model("plain", 17);
  ir::graph_builder gb(m.graph());
  ir::value* x = gb.input("x", ir::data_type::float32, {2, 8});
  gb.output(gb.relu(gb.add(x, gb.relu(x))));
  CHECK(checker.require_declined(m).counters.at("declined-read-elsewhere") == 0);

  ir::model old = ir::make_model("old", 7);
  ir::graph_builder ob(old.graph());
  ir::value* ox = ob.input("x", ir::data_type::float32, {2, 8});
  ob.output(ob.op("LayerNormalization", {ob.add(ox, ob.relu(ox)), ob.random_constant("gamma", {8}, 1.0f)}));
  checker.require_declined(old);
}
