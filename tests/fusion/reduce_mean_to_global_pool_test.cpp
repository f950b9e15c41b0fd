// reduce-mean-to-global-pool: a ReduceMean over all spatial axes becomes GlobalAveragePool,
// followed by a Flatten when it dropped the reduced axes.

#include "inferopt/fusion/reduce_mean_to_global_pool.hpp"

#include <catch2/catch.hpp>

#include "fusion/fusion_test_util.hpp"

using namespace inferopt;

namespace {

const test::pass_checker checker("reduce-mean-to-global-pool");
using ints = std::vector<std::int64_t>;

/// x[dims] -> ReduceMean(axes, keepdims) -> Relu -> graph output; the axes are an attribute
/// before opset 18 and a constant input from 18.
struct mean_model {
  ir::model m;
  ir::node* mean = nullptr;
};

mean_model make_mean(std::int64_t opset, ir::shape dims, ints axes, std::int64_t keepdims,
                     ir::data_type type = ir::data_type::float32) {
  mean_model c{ir::make_model("mean", opset)};
  ir::graph& g = c.m.graph();
  ir::graph_builder b(g);
  ir::value* x = b.input("x", type, std::move(dims));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("keepdims", keepdims));
  std::vector<ir::value*> inputs = {x};
  if (opset < 18) {
    attrs.push_back(ir::attribute::make_ints("axes", axes));
  } else {
    inputs.push_back(b.constant_i64("axes", {static_cast<std::int64_t>(axes.size())}, axes));
  }
  c.mean = test::add_op(g, "ReduceMean", inputs, "mean", {}, std::move(attrs));
  b.output(b.relu(c.mean->output(0)));
  return c;
}

}  // namespace

TEST_CASE("reduce-mean-to-global-pool turns a spatial mean that keeps its dims into GlobalAveragePool",
          "[fusion][reduce-mean-to-global-pool]") {
  const std::int64_t opset = GENERATE(13, 18);
  const ints axes = GENERATE(ints{2, 3}, ints{-1, -2});
  CAPTURE(opset, axes);
  mean_model c = make_mean(opset, {2, 3, 5, 4}, axes, 1);
  const pass_record r = checker.run_and_compare(c.m);
  CHECK(r.counters.at("to-global-pool") == 1);
  CHECK(test::count_ops(c.m.graph(), "ReduceMean") == 0);
  CHECK(test::count_ops(c.m.graph(), "GlobalAveragePool") == 1);
  CHECK(c.mean->inputs().size() == 1);
  CHECK(c.mean->attributes().empty());
}

TEST_CASE("reduce-mean-to-global-pool follows a mean that drops its dims with a Flatten",
          "[fusion][reduce-mean-to-global-pool]") {
  const std::int64_t opset = GENERATE(13, 18);
  SECTION("4-D, MNASNet's head") {
    mean_model c = make_mean(opset, {"batch", 8, 3, 3}, {2, 3}, 0);
    const std::string output_name = c.mean->output(0)->name();
    checker.run_and_compare(c.m);
    CHECK(test::count_ops(c.m.graph(), "GlobalAveragePool") == 1);
    REQUIRE(c.mean->op_type() == "Flatten");
    CHECK(c.mean->attr_int("axis", 0) == 1);
    CHECK(c.mean->output(0)->name() == output_name);
  }
  SECTION("5-D") {
    mean_model c5 = make_mean(opset, {1, 2, 3, 4, 5}, {2, 3, 4}, 0, ir::data_type::float64);
    checker.run_and_compare(c5.m);
  }
}

TEST_CASE("reduce-mean-to-global-pool declines other means", "[fusion][reduce-mean-to-global-pool]") {
  SECTION("channels reduced too") {
    mean_model c = make_mean(13, {2, 3, 5, 4}, {1, 2, 3}, 1);
    checker.require_declined(c.m);
  }
  SECTION("one spatial axis of two") {
    mean_model c = make_mean(18, {2, 3, 5, 4}, {3}, 1);
    checker.require_declined(c.m);
  }
  SECTION("an integer input") {
    mean_model c = make_mean(13, {2, 3, 5, 4}, {2, 3}, 1, ir::data_type::int32);
    checker.require_declined(c.m);
  }
  SECTION("rank 2: no spatial axis") {
    mean_model c = make_mean(13, {2, 3}, {1}, 1);
    checker.require_declined(c.m);
  }
  SECTION("rank 3: a transformer's LayerNorm mean over the hidden axis") {
    mean_model c = make_mean(18, {1, 16, 32}, {-1}, 1);
    checker.require_declined(c.m);
  }
}
