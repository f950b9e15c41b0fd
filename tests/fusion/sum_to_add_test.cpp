// sum-to-add: a two-input Sum becomes Add; other Sums and old opsets are left alone.

#include "inferopt/fusion/sum_to_add.hpp"

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("sum-to-add");

}  // namespace

TEST_CASE("sum-to-add turns a two-input Sum into an Add with the same numbers", "[fusion][sum-to-add]") {
  ir::model m = ir::make_model("sum", 13);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 4});
  ir::value* y = b.op("Sum", {b.relu(x), b.random_constant("c", {4}, 1.0f)});
  b.output(y);
  const std::string name = y->name();
  checker.run_and_compare(m);
  CHECK(test::count_ops(m.graph(), "Add") == 1);
  CHECK(test::count_ops(m.graph(), "Sum") == 0);
  CHECK(test::output_names(m.graph()) == std::vector<std::string>{name});
}

TEST_CASE("sum-to-add leaves Sums of one or three inputs, and opsets before 8", "[fusion][sum-to-add]") {
  const int inputs = GENERATE(1, 3);
  ir::model m = ir::make_model("sums", 13);
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3});
  b.output(b.op("Sum", std::vector<ir::value*>(static_cast<std::size_t>(inputs), x)));
  checker.require_declined(m);

  ir::model old = ir::make_model("old", 7);
  ir::graph_builder ob(old.graph());
  ir::value* ox = ob.input("x", ir::data_type::float32, {2, 3});
  ob.output(ob.op("Sum", {ox, ob.relu(ox)}));
  checker.require_declined(old);
}
