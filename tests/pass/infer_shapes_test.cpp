// infer-shapes: untyped values get the types our shape inference computes; a declared symbolic dim is refined to a number.

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "pass_test_util.hpp"

namespace {

using namespace inferopt;

std::size_t untyped_node_outputs(const ir::graph& g) {
  std::size_t n = 0;
  for (ir::node* x : g.nodes()) {
    for (ir::value* v : x->outputs()) n += v && !v->type() ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("infer-shapes types every intermediate of a model that has no value_info", "[pass][infer-shapes]") {
  ir::model m = ir::make_default_model();
  for (ir::value* v : m.graph().values()) {
    if (v->producer() && !v->is_graph_output()) m.graph().clear_value_info(v), v->set_type(std::nullopt);
  }
  REQUIRE(untyped_node_outputs(m.graph()) > 0);
  const run_report r = test::run_cleanups(m, "infer-shapes");
  CHECK(r.passes.at(0).changed);
  CHECK(untyped_node_outputs(m.graph()) == 0);
  // The types survive a save and load (they are written as value_info).
  const ir::model back = ir::parse_model(test::bytes_of(m));
  CHECK(untyped_node_outputs(back.graph()) == 0);
}

TEST_CASE("infer-shapes refines a declared symbolic dim to the number its inputs give", "[pass][infer-shapes]") {
  ir::model m = ir::make_model("typed", 17);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3});
  ir::value* y = b.relu(x);
  y->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{"n", 3}});  // symbolic: less than inferred
  b.output(b.relu(y));
  (void)test::run_cleanups(m, "infer-shapes");
  CHECK(to_string(y->type()->dims) == "2x3");
}

TEST_CASE("infer-shapes changes nothing when the opset is newer than its rules know", "[pass][infer-shapes]") {
  ir::model m = ir::make_model("future", 99);
  ir::graph_builder b(m.graph());
  b.output(b.relu(b.relu(b.input("x", ir::data_type::float32, {2, 3}))));
  const std::string before = test::bytes_of(m);
  const run_report r = test::run_cleanups(m, "infer-shapes");
  CHECK_FALSE(r.passes.at(0).changed);
  CHECK(test::bytes_of(m) == before);
}
