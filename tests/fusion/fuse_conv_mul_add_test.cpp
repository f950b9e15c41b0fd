// fuse-conv-mul-add: per-channel constant Mul / Add / Sub / Div folded into conv weights.
//
// Numeric checks run the model before and after in the executor at rtol 1e-4: the folded
// weights are computed in double and rounded once to the weights' type, so the results
// differ from the unfused model only by float32 rounding (a few ulps per element).

#include "inferopt/fusion/fuse_conv_mul_add.hpp"

#include <catch2/catch.hpp>

#include "conv_fold_test_util.hpp"
#include "fusion_test_util.hpp"
#include "inferopt/ir/verify.hpp"

using namespace inferopt;

namespace {

/// Adds `op(y, c)` (or `op(c, y)` when `constant_first`) with a constant c of `dims`, whose
/// values are random and away from zero (Div divides by them).
ir::node* add_arithmetic(test::conv_model& c, const std::string& op, ir::value* y, std::vector<std::int64_t> dims,
                         bool constant_first = false, const std::string& name = "op",
                         ir::data_type type = ir::data_type::float32) {
  ir::graph& g = c.m.graph();
  ir::value* k = test::random_initializer(g, name + "_c", type, std::move(dims), c.rng, 0.5, 1.5);
  std::vector<ir::value*> inputs = constant_first ? std::vector<ir::value*>{k, y} : std::vector<ir::value*>{y, k};
  ir::node* n = test::add_op(g, op, inputs, name, {name + "_out"});
  n->output(0)->set_type(y->type());
  return n;
}

pass_record run(ir::model& m, std::string_view pipeline = "fuse-conv-mul-add") {
  run_report r = test::run_builtin(m, pipeline);
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(!r.passes.empty());
  return r.passes.back();
}

void require_declined(ir::model& m, const std::string& reason = {}) {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
  if (!reason.empty()) CHECK(r.counters[reason] == 1);
}

/// Folds, then checks that only the conv is left and that the numbers match.
void require_folded(ir::model& m, std::int64_t folds = 1) {
  const ir::model before = test::copy_of(m);
  const std::vector<std::string> outputs = test::output_names(m.graph());
  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(r.rewrites == folds);
  CHECK(m.graph().node_count() == 1);
  CHECK(test::output_names(m.graph()) == outputs);
  test::require_same_outputs(before, m);
}

}  // namespace

TEST_CASE("fuse-conv-mul-add folds into a copy of weights another conv shares", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::value* w = c.conv->input(1);
  ir::value* b = c.conv->input(2);
  const std::string w_bytes = *w->initializer()->bytes;
  ir::node* twin = test::add_op(g, "Conv", {c.x, w, b}, "twin", {"twin_out"});
  ir::node* n = add_arithmetic(c, "Mul", c.y, {6, 1, 1});
  g.add_output(n->output(0));
  g.add_output(twin->output(0));

  const ir::model before = test::copy_of(c.m);
  CHECK(run(c.m).rewrites == 1);
  test::require_same_outputs(before, c.m);
  CHECK(twin->input(1) == w);
  CHECK(twin->input(2) == b);
  CHECK(*w->initializer()->bytes == w_bytes);
  CHECK(c.conv->input(1) != w);
}

TEST_CASE("fuse-conv-mul-add folds a per-channel or scalar constant of every accepted shape",
          "[fusion][fuse-conv-mul-add]") {
  using dims = std::vector<std::int64_t>;
  const std::string op = GENERATE(as<std::string>{}, "Mul", "Add", "Sub", "Div");
  const dims shape = GENERATE(dims{6, 1, 1}, dims{1, 6, 1, 1}, dims{1}, dims{}, dims{1, 1, 1, 1}, dims{1, 1});
  const bool constant_first = GENERATE(false, true);
  const bool bias = GENERATE(true, false);
  if (constant_first && (op == "Sub" || op == "Div")) return;  // not the foldable form; declined below
  CAPTURE(op, shape, constant_first, bias);
  test::conv_shape s;
  s.bias = bias;
  test::conv_model c = test::make_conv_model(s);
  ir::node* n = add_arithmetic(c, op, c.y, shape, constant_first);
  c.m.graph().add_output(n->output(0));

  require_folded(c.m);
  CHECK(c.conv->output(0)->name() == "op_out");
  CHECK(c.conv->inputs().size() == 3);
}

TEST_CASE("fuse-conv-mul-add folds per-channel constants of 1-D and 3-D convs", "[fusion][fuse-conv-mul-add]") {
  using dims = std::vector<std::int64_t>;
  const auto [spatial, shape] = GENERATE(table<int, dims>({{1, dims{1, 6, 1}}, {1, dims{6, 1}}, {1, dims{}},
                                                           {3, dims{6, 1, 1, 1}}, {3, dims{1, 6, 1, 1, 1}}}));
  const std::string op = GENERATE(as<std::string>{}, "Mul", "Add");
  CAPTURE(spatial, shape, op);
  test::conv_shape s;
  s.spatial = spatial;
  test::conv_model c = test::make_conv_model(s);
  ir::node* n = add_arithmetic(c, op, c.y, shape);
  c.m.graph().add_output(n->output(0));
  require_folded(c.m);
}

TEST_CASE("fuse-conv-mul-add folds into grouped and depthwise convs and ConvTranspose", "[fusion][fuse-conv-mul-add]") {
  const bool transpose = GENERATE(false, true);
  const std::int64_t group = GENERATE(1, 2, 4);
  const std::string op = GENERATE(as<std::string>{}, "Mul", "Div", "Add");
  CAPTURE(transpose, group, op);
  test::conv_shape s;
  s.transpose = transpose;
  s.group = group;
  s.out_channels = group == 4 ? 4 : 6;
  s.bias = false;
  test::conv_model c = test::make_conv_model(s);
  ir::node* n = add_arithmetic(c, op, c.y, {s.out_channels, 1, 1});
  c.m.graph().add_output(n->output(0));
  require_folded(c.m);
}

TEST_CASE("fuse-conv-mul-add folds a double model and keeps its element type", "[fusion][fuse-conv-mul-add]") {
  test::conv_shape s;
  s.type = ir::data_type::float64;
  test::conv_model c = test::make_conv_model(s);
  ir::node* mul = add_arithmetic(c, "Mul", c.y, {6, 1, 1}, false, "mul", s.type);
  ir::node* add = add_arithmetic(c, "Add", mul->output(0), {6, 1, 1}, true, "add", s.type);
  c.m.graph().add_output(add->output(0));
  require_folded(c.m, 2);
  CHECK(c.conv->input(1)->initializer()->dtype == ir::data_type::float64);
  CHECK(c.conv->input(2)->initializer()->dtype == ir::data_type::float64);
}

TEST_CASE("fuse-conv-mul-add folds a whole chain in one run", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::node* mul = add_arithmetic(c, "Mul", c.y, {6, 1, 1}, false, "mul");
  ir::node* add = add_arithmetic(c, "Add", mul->output(0), {1, 6, 1, 1}, true, "add");
  ir::node* sub = add_arithmetic(c, "Sub", add->output(0), {}, false, "sub");
  ir::node* div = add_arithmetic(c, "Div", sub->output(0), {6, 1, 1}, false, "div");
  c.m.graph().add_output(div->output(0));

  const ir::model before = test::copy_of(c.m);
  pass_record r = run(c.m);
  CHECK(r.rewrites == 4);
  for (const char* statistic : {"muls-folded", "adds-folded", "subs-folded", "divs-folded"}) {
    CAPTURE(statistic);
    CHECK(r.counters.at(statistic) == 1);
  }
  CHECK(c.m.graph().node_count() == 1);
  CHECK(test::output_names(c.m.graph()) == std::vector<std::string>{"div_out"});
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-conv-mul-add after fuse-conv-bn leaves one conv of a Conv BN Mul Add chain",
          "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph_builder b(c.m.graph(), 5);
  ir::value* bn = b.batch_norm(c.y);
  ir::node* mul = add_arithmetic(c, "Mul", bn, {6, 1, 1}, false, "mul");
  ir::node* add = add_arithmetic(c, "Add", mul->output(0), {6, 1, 1}, false, "add");
  ir::node* relu = test::add_op(c.m.graph(), "Relu", {add->output(0)}, "relu", {"z"});
  c.m.graph().add_output(relu->output(0));

  const ir::model before = test::copy_of(c.m);
  run_report r = test::run_builtin(c.m, "fuse-conv-bn,fuse-conv-mul-add,remove-unused");
  CHECK(r.passes[0].rewrites == 1);
  CHECK(r.passes[1].rewrites == 2);
  CHECK(c.m.graph().node_count() == 2);
  CHECK(c.m.graph().initializers().size() == 2);  // the folded W and B only
  test::require_same_outputs(before, c.m);
}

TEST_CASE("fuse-conv-mul-add folds the broadcast form of opsets before 7", "[fusion][fuse-conv-mul-add]") {
  test::conv_shape s;
  s.opset = 6;
  test::conv_model c = test::make_conv_model(s);
  ir::node* n = add_arithmetic(c, "Mul", c.y, {6});
  n->set_attribute(ir::attribute::make_int("broadcast", 1));
  SECTION("from axis 1") { n->set_attribute(ir::attribute::make_int("axis", 1)); }
  SECTION("from axis -3") { n->set_attribute(ir::attribute::make_int("axis", -3)); }
  c.m.graph().add_output(n->output(0));
  require_folded(c.m);
}

TEST_CASE("fuse-conv-mul-add run twice gives the same graph as run once", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::node* n = add_arithmetic(c, "Mul", c.y, {6, 1, 1});
  c.m.graph().add_output(n->output(0));
  run(c.m);
  const std::string once = test::bytes_of(c.m);
  CHECK_FALSE(run(c.m).changed);
  CHECK(test::bytes_of(c.m) == once);
}

TEST_CASE("fuse-conv-mul-add declines a constant that varies along another axis or enlarges the output",
          "[fusion][fuse-conv-mul-add]") {
  using dims = std::vector<std::int64_t>;
  const dims shape = GENERATE(dims{6}, dims{5}, dims{1, 1, 1, 5}, dims{1, 1, 5, 1}, dims{2, 6, 1, 1},
                              dims{1, 1, 6, 1, 1}, dims{6, 5, 5}, dims{3, 1, 1});
  CAPTURE(shape);
  test::conv_model c = test::make_conv_model({});
  ir::node* n = add_arithmetic(c, GENERATE(as<std::string>{}, "Mul", "Add"), c.y, shape);
  c.m.graph().add_output(n->output(0));
  require_declined(c.m, "declined-broadcast");
}

TEST_CASE("fuse-conv-mul-add declines Sub and Div with the constant first", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::node* n = add_arithmetic(c, GENERATE(as<std::string>{}, "Sub", "Div"), c.y, {6, 1, 1}, true);
  c.m.graph().add_output(n->output(0));
  require_declined(c.m, "declined-operand-order");
}

TEST_CASE("fuse-conv-mul-add declines an operand that is not a constant of the weights' type",
          "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::node* n = add_arithmetic(c, "Mul", c.y, {6, 1, 1});
  g.add_output(n->output(0));
  SECTION("fed by the caller") { g.set_input(n, 1, g.add_input("fed", test::float_type({6, 1, 1}))); }
  SECTION("an initializer the caller may override") {
    ir::value* k = g.add_input("overridable", test::float_type({6, 1, 1}));
    g.set_initializer(k, *n->input(1)->initializer());
    g.set_input(n, 1, k);
  }
  SECTION("double") {
    g.set_input(n, 1, test::fixed_initializer(g, "wide", ir::data_type::float64, {1}, {2.0}));
  }
  SECTION("integer") {
    ir::graph_builder b(g);
    g.set_input(n, 1, b.constant_i64("ints", {1}, {2}));
  }
  SECTION("another node's output") {
    ir::node* relu = test::add_op(g, "Relu", {c.x}, "relu", {"relu_out"});
    g.move_before(relu, c.conv);
    g.set_input(n, 1, relu->output(0));
  }
  require_declined(c.m, "declined-operand");
}

TEST_CASE("fuse-conv-mul-add declines when the conv's output has another reader", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::node* n = add_arithmetic(c, "Add", c.y, {6, 1, 1});
  g.add_output(n->output(0));
  SECTION("another node") {
    ir::node* relu = test::add_op(g, "Relu", {c.y}, "relu", {"relu_out"});
    g.add_output(relu->output(0));
  }
  SECTION("the graph output list") { g.add_output(c.y); }
  require_declined(c.m);
}

TEST_CASE("fuse-conv-mul-add declines a division by zero", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::node* n = add_arithmetic(c, "Div", c.y, {6, 1, 1});
  g.set_input(n, 1, test::fixed_initializer(g, "zeros", ir::data_type::float32, {6, 1, 1}, {1, 2, 0, 1, 1, 1}));
  g.add_output(n->output(0));
  require_declined(c.m, "declined-division-by-zero");
}

TEST_CASE("fuse-conv-mul-add declines a product that overflows the weights' type", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::node* n = add_arithmetic(c, "Mul", c.y, {});
  g.set_input(n, 1, test::fixed_initializer(g, "huge", ir::data_type::float32, {}, {1e38}));
  g.add_output(n->output(0));
  // The weights stay finite (|w| < 0.5), but 10 * 1e38 in the bias does not fit in float32.
  g.set_input(c.conv, 2, test::fixed_initializer(g, "big_b", ir::data_type::float32, {6}, {10, 0, 0, 0, 0, 0}));
  require_declined(c.m, "declined-overflow");
}

TEST_CASE("fuse-conv-mul-add declines the opset 6 forms it cannot fold", "[fusion][fuse-conv-mul-add]") {
  test::conv_shape s;
  s.opset = 6;
  test::conv_model c = test::make_conv_model(s);
  ir::graph& g = c.m.graph();
  SECTION("without broadcast") {
    ir::node* n = add_arithmetic(c, "Mul", c.y, {1, 6, 5, 5});
    g.add_output(n->output(0));
  }
  SECTION("a [C] constant aligned to the last axis") {
    ir::node* n = add_arithmetic(c, "Mul", c.y, {6});
    n->set_attribute(ir::attribute::make_int("broadcast", 1));
    g.add_output(n->output(0));
  }
  SECTION("the conv's output as the broadcast operand") {
    ir::node* n = add_arithmetic(c, "Mul", c.y, {6}, true);
    n->set_attribute(ir::attribute::make_int("broadcast", 1));
    n->set_attribute(ir::attribute::make_int("axis", 1));
    g.add_output(n->output(0));
  }
  require_declined(c.m, "declined-broadcast");
}

TEST_CASE("fuse-conv-mul-add declines an op outside the default domain", "[fusion][fuse-conv-mul-add]") {
  test::conv_model c = test::make_conv_model({});
  ir::node* n = add_arithmetic(c, "Mul", c.y, {6, 1, 1});
  n->set_domain("com.example");
  c.m.graph().add_output(n->output(0));
  require_declined(c.m);
}
