// fuse-conv-bn: BatchNormalization folded into Conv / ConvTranspose weights.
//
// Numeric checks run the model before and after in the executor at rtol 1e-4: the folded
// weights are computed in double and rounded once to float32, so the fused conv differs from
// conv-then-BN only by float32 rounding of the accumulation (a few ulps per element).

#include "inferopt/fusion/fuse_conv_bn.hpp"

#include <catch2/catch.hpp>

#include "conv_fold_test_util.hpp"
#include "fusion_test_util.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/verify.hpp"

using namespace inferopt;

namespace {

/// Adds `BatchNormalization(x)` over `channels` channels with random inference statistics.
ir::node* add_batch_norm(test::conv_model& c, ir::value* x, std::int64_t channels, const std::string& name = "bn",
                         ir::data_type type = ir::data_type::float32) {
  ir::graph& g = c.m.graph();
  std::vector<ir::value*> inputs{x, test::random_initializer(g, name + "_scale", type, {channels}, c.rng, 0.5, 1.5),
                                 test::random_initializer(g, name + "_beta", type, {channels}, c.rng, -0.3, 0.3),
                                 test::random_initializer(g, name + "_mean", type, {channels}, c.rng, -0.3, 0.3),
                                 test::random_initializer(g, name + "_var", type, {channels}, c.rng, 0.5, 2.0)};
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("epsilon", 1e-3f));
  ir::node* bn = test::add_op(g, "BatchNormalization", inputs, name, {name + "_out"}, std::move(attrs));
  bn->output(0)->set_type(x->type());
  return bn;
}

/// Conv -> BatchNormalization -> graph output "bn_out".
test::conv_model conv_bn(const test::conv_shape& s) {
  test::conv_model c = test::make_conv_model(s);
  ir::node* bn = add_batch_norm(c, c.y, s.out_channels, "bn", s.type);
  c.m.graph().add_output(bn->output(0));
  return c;
}

pass_record run(ir::model& m) {
  run_report r = test::run_builtin(m, "fuse-conv-bn");
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// Runs the pass on a model it must decline and checks that nothing changed.
void require_declined(ir::model& m, const std::string& reason = {}) {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
  if (!reason.empty()) CHECK(r.counters[reason] == 1);
}

/// Folds, then checks the structure and the numbers against the unfused model.
void require_folded(ir::model& m, std::size_t batch_norms = 1) {
  const ir::model before = test::copy_of(m);
  const std::vector<std::string> outputs = test::output_names(m.graph());
  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(r.rewrites == static_cast<std::int64_t>(batch_norms));
  CHECK(r.counters.at("batch-norms-folded") == static_cast<std::int64_t>(batch_norms));
  CHECK(test::count_ops(m.graph(), "BatchNormalization") == 0);
  CHECK(test::output_names(m.graph()) == outputs);
  test::require_same_outputs(before, m);
}

}  // namespace

TEST_CASE("fuse-conv-bn folds batch norm into conv weights for every spatial rank, group and bias",
          "[fusion][fuse-conv-bn]") {
  const int spatial = GENERATE(1, 2, 3);
  const std::int64_t group = GENERATE(1, 2, 4);  // 4 of 4 input and output channels: depthwise
  const bool bias = GENERATE(true, false);
  CAPTURE(spatial, group, bias);
  test::conv_shape s;
  s.spatial = spatial;
  s.in_channels = 4;
  s.out_channels = group == 4 ? 4 : 6;
  s.group = group;
  s.bias = bias;
  test::conv_model c = conv_bn(s);

  require_folded(c.m);
  ir::graph& g = c.m.graph();
  CHECK(test::count_ops(g, "Conv") == 1);
  REQUIRE(c.conv->inputs().size() == 3);
  CHECK(c.conv->input(2)->initializer()->dims == std::vector<std::int64_t>{s.out_channels});
  CHECK(c.conv->output(0)->name() == "bn_out");  // the conv took over the graph output's name
}

TEST_CASE("fuse-conv-bn folds batch norm into ConvTranspose weights with groups", "[fusion][fuse-conv-bn]") {
  const int spatial = GENERATE(1, 2, 3);
  const std::int64_t group = GENERATE(1, 2, 4);
  const bool bias = GENERATE(true, false);
  CAPTURE(spatial, group, bias);
  test::conv_shape s;
  s.transpose = true;
  s.spatial = spatial;
  s.in_channels = 4;
  s.out_channels = group == 4 ? 4 : 6;  // W is (4, out/group, 3...)
  s.group = group;
  s.bias = bias;
  test::conv_model c = conv_bn(s);

  require_folded(c.m);
  CHECK(test::count_ops(c.m.graph(), "ConvTranspose") == 1);
  CHECK(c.conv->inputs().size() == 3);
}

TEST_CASE("fuse-conv-bn folds a double model and keeps its element type", "[fusion][fuse-conv-bn]") {
  test::conv_shape s;
  s.type = ir::data_type::float64;
  s.bias = GENERATE(true, false);
  test::conv_model c = conv_bn(s);
  require_folded(c.m);
  CHECK(c.conv->input(1)->initializer()->dtype == ir::data_type::float64);
  CHECK(c.conv->input(2)->initializer()->dtype == ir::data_type::float64);
}

TEST_CASE("fuse-conv-bn folds a float16 model into float16 weights", "[fusion][fuse-conv-bn]") {
  // The executor runs float32 and float64 only, so the folded values are checked directly:
  // W' = W * s and B' = (B - mean) * s + beta, each rounded once to float16 (rel. 1e-3).
  test::conv_shape s;
  s.type = ir::data_type::float16;
  s.in_channels = 2;
  s.out_channels = 2;
  s.spatial = 1;
  test::conv_model c = conv_bn(s);
  ir::graph& g = c.m.graph();
  const ir::node* bn = g.node_list().back();
  ir::model reader = ir::make_model("reader");
  pass_context ctx(reader);
  const std::vector<double> w = *ir::constant_floats(c.conv->input(1), ctx.ir_version());
  const std::vector<double> b = *ir::constant_floats(c.conv->input(2), ctx.ir_version());
  std::vector<std::vector<double>> p;
  for (std::size_t i = 1; i <= 4; ++i) p.push_back(*ir::constant_floats(bn->input(i), ctx.ir_version()));

  const pass_record r = run(c.m);
  REQUIRE(r.rewrites == 1);
  const ir::tensor& folded_w = *c.conv->input(1)->initializer();
  REQUIRE(folded_w.dtype == ir::data_type::float16);
  REQUIRE(c.conv->input(2)->initializer()->dtype == ir::data_type::float16);
  const std::vector<double> w2 = *ir::constant_floats(c.conv->input(1), ctx.ir_version());
  const std::vector<double> b2 = *ir::constant_floats(c.conv->input(2), ctx.ir_version());
  const std::size_t per_channel = w.size() / 2;
  for (std::size_t o = 0; o < 2; ++o) {
    const double scale = p[0][o] / std::sqrt(p[3][o] + static_cast<double>(1e-3f));
    CHECK(b2[o] == Approx((b[o] - p[2][o]) * scale + p[1][o]).epsilon(1e-3).margin(1e-3));
    for (std::size_t k = o * per_channel; k < (o + 1) * per_channel; ++k) {
      CHECK(w2[k] == Approx(w[k] * scale).epsilon(1e-3).margin(1e-4));
    }
  }
}

TEST_CASE("fuse-conv-bn folds a chain of two batch norms after one conv in one run", "[fusion][fuse-conv-bn]") {
  test::conv_model c = test::make_conv_model({});
  ir::node* bn1 = add_batch_norm(c, c.y, 6, "bn1");
  ir::node* bn2 = add_batch_norm(c, bn1->output(0), 6, "bn2");
  ir::node* relu = test::add_op(c.m.graph(), "Relu", {bn2->output(0)}, "relu", {"z"});
  c.m.graph().add_output(relu->output(0));
  require_folded(c.m, 2);
  CHECK(relu->input(0) == c.y);
  CHECK(c.y->name() == "y");
}

TEST_CASE("fuse-conv-bn writes new weights and leaves weights shared with another conv alone",
          "[fusion][fuse-conv-bn]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::value* w = c.conv->input(1);
  ir::value* b = c.conv->input(2);
  const std::string w_bytes = *w->initializer()->bytes;
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::node* twin = test::add_op(g, "Conv", {c.x, w, b}, "twin", {"twin_out"}, std::move(attrs));
  ir::node* bn = add_batch_norm(c, c.y, 6);
  g.add_output(bn->output(0));
  g.add_output(twin->output(0));

  require_folded(c.m);
  CHECK(twin->input(1) == w);
  CHECK(twin->input(2) == b);
  CHECK(*w->initializer()->bytes == w_bytes);
  CHECK(c.conv->input(1) != w);
  CHECK(c.conv->input(2) != b);
}

TEST_CASE("fuse-conv-bn folds the batch norms of two convs sharing weights into a copy for each",
          "[fusion][fuse-conv-bn]") {
  // TorchScript exports share equal initializers between layers; each conv's fold must reach
  // that conv alone, whichever is folded first.
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::value* w = c.conv->input(1);
  ir::value* b = c.conv->input(2);
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::node* twin = test::add_op(g, "Conv", {c.x, w, b}, "twin", {"twin_out"}, std::move(attrs));
  twin->output(0)->set_type(c.y->type());
  g.add_output(add_batch_norm(c, c.y, 6, "bn")->output(0));
  g.add_output(add_batch_norm(c, twin->output(0), 6, "twin_bn")->output(0));

  require_folded(c.m, 2);
  CHECK(c.conv->input(1) != twin->input(1));
  CHECK(c.conv->input(2) != twin->input(2));
  // The second fold found the original read by its conv alone and edited it in place.
  CHECK((c.conv->input(1) == w || twin->input(1) == w));
  CHECK((c.conv->input(2) == b || twin->input(2) == b));
}

TEST_CASE("fuse-conv-bn keeps the names of weights only its conv reads", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  const std::string w = c.conv->input(1)->name();
  const std::string b = c.conv->input(2)->name();
  require_folded(c.m);
  CHECK(c.conv->input(1)->name() == w);
  CHECK(c.conv->input(2)->name() == b);
}

TEST_CASE("fuse-conv-bn folds the inference forms of older opsets", "[fusion][fuse-conv-bn]") {
  test::conv_shape s;
  SECTION("opset 8 with spatial = 1") {
    s.opset = 8;
    test::conv_model c = conv_bn(s);
    c.m.graph().node_list().back()->set_attribute(ir::attribute::make_int("spatial", 1));
    require_folded(c.m);
  }
  SECTION("opset 9") {
    s.opset = 9;
    test::conv_model c = conv_bn(s);
    require_folded(c.m);
  }
  SECTION("opset 14 with training_mode = 0") {
    s.opset = 14;
    test::conv_model c = conv_bn(s);
    c.m.graph().node_list().back()->set_attribute(ir::attribute::make_int("training_mode", 0));
    require_folded(c.m);
  }
}

TEST_CASE("fuse-conv-bn folds when the training outputs of an old opset exist but are unused",
          "[fusion][fuse-conv-bn]") {
  // The executor refuses a BatchNormalization with training outputs, so only the structure
  // is checked here; the arithmetic is the same as in the cases above.
  test::conv_shape s;
  s.opset = 12;
  test::conv_model c = test::make_conv_model(s);
  ir::node* plain = add_batch_norm(c, c.y, 6);
  std::vector<ir::value*> inputs(plain->inputs().begin(), plain->inputs().end());
  ir::graph& g = c.m.graph();
  g.replace_all_uses(plain->output(0), c.y);
  g.erase(plain);
  ir::node* bn = test::add_op(g, "BatchNormalization", inputs, "bn", {"bn_out", "running_mean", "running_var"});
  g.add_output(bn->output(0));

  pass_record r = run(c.m);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(g, "BatchNormalization") == 0);
  CHECK(test::output_names(g) == std::vector<std::string>{"bn_out"});
}

TEST_CASE("fuse-conv-bn run twice gives the same graph as run once", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  run(c.m);
  const std::string once = test::bytes_of(c.m);
  CHECK_FALSE(run(c.m).changed);
  CHECK(test::bytes_of(c.m) == once);
}

TEST_CASE("fuse-conv-bn declines when the conv's weights are not constant", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  ir::graph& g = c.m.graph();
  SECTION("weights fed by the caller") {
    ir::value* w = g.add_input("w_fed", test::float_type({6, 4, 3, 3}));
    g.set_input(c.conv, 1, w);
  }
  SECTION("an initializer that is also a graph input (IR >= 4 lets the caller override it)") {
    ir::value* w = g.add_input("w_default", test::float_type({6, 4, 3, 3}));
    g.set_initializer(w, *c.conv->input(1)->initializer());
    g.set_input(c.conv, 1, w);
  }
  SECTION("a bias fed by the caller") {
    ir::value* b = g.add_input("b_fed", test::float_type({6}));
    g.set_input(c.conv, 2, b);
  }
  require_declined(c.m);
}

TEST_CASE("fuse-conv-bn treats every initializer of an IR 3 model as constant", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  ir::graph& g = c.m.graph();
  c.m.ir_version = 3;
  ir::value* w = g.add_input("w_listed", test::float_type({6, 4, 3, 3}));
  g.set_initializer(w, *c.conv->input(1)->initializer());
  g.set_input(c.conv, 1, w);
  CHECK(run(c.m).rewrites == 1);
}

TEST_CASE("fuse-conv-bn declines when a batch norm parameter is not a constant per-channel float",
          "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  ir::graph& g = c.m.graph();
  ir::node* bn = g.node_list().back();
  const std::size_t slot = GENERATE(1, 2, 3, 4);
  CAPTURE(slot);
  SECTION("fed by the caller") { g.set_input(bn, slot, g.add_input("fed", test::float_type({6}))); }
  SECTION("one value too few") {
    g.set_input(bn, slot, test::fixed_initializer(g, "short", ir::data_type::float32, {5}, {1, 1, 1, 1, 1}));
  }
  SECTION("rank 2") {
    g.set_input(bn, slot, test::fixed_initializer(g, "wide", ir::data_type::float32, {6, 1}, {1, 1, 1, 1, 1, 1}));
  }
  SECTION("integers") {
    ir::graph_builder b(g);
    g.set_input(bn, slot, b.constant_i64("ints", {6}, {1, 1, 1, 1, 1, 1}));
  }
  require_declined(c.m, "declined-parameters");
}

TEST_CASE("fuse-conv-bn declines when the conv's output has another reader", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  ir::graph& g = c.m.graph();
  SECTION("another node") {
    ir::node* relu = test::add_op(g, "Relu", {c.y}, "relu", {"relu_out"});
    g.add_output(relu->output(0));
  }
  SECTION("the graph output list") { g.add_output(c.y); }
  require_declined(c.m);
}

TEST_CASE("fuse-conv-bn declines a batch norm that is not in inference form", "[fusion][fuse-conv-bn]") {
  test::conv_shape s;
  SECTION("opset 14 with training_mode = 1") {
    s.opset = 14;
    test::conv_model c = conv_bn(s);
    c.m.graph().node_list().back()->set_attribute(ir::attribute::make_int("training_mode", 1));
    require_declined(c.m, "declined-training-form");
  }
  SECTION("opset 8 with spatial = 0") {
    s.opset = 8;
    test::conv_model c = conv_bn(s);
    c.m.graph().node_list().back()->set_attribute(ir::attribute::make_int("spatial", 0));
    require_declined(c.m, "declined-training-form");
  }
  SECTION("opset 12 with a used running-mean output") {
    s.opset = 12;
    test::conv_model c = test::make_conv_model(s);
    ir::graph& g = c.m.graph();
    ir::node* plain = add_batch_norm(c, c.y, 6);
    std::vector<ir::value*> inputs(plain->inputs().begin(), plain->inputs().end());
    g.erase(plain);
    ir::node* bn = test::add_op(g, "BatchNormalization", inputs, "bn", {"bn_out", "running_mean"});
    g.add_output(bn->output(0));
    g.add_output(bn->output(1));
    require_declined(c.m, "declined-training-form");
  }
}

TEST_CASE("fuse-conv-bn declines when var + epsilon is not positive", "[fusion][fuse-conv-bn]") {
  test::conv_model c = test::make_conv_model({});
  ir::graph& g = c.m.graph();
  ir::node* bn = add_batch_norm(c, c.y, 6);
  g.add_output(bn->output(0));
  g.set_input(bn, 4, test::fixed_initializer(g, "bad_var", ir::data_type::float32, {6}, {1, 1, 1, -1, 1, 1}));
  require_declined(c.m, "declined-variance");
}

TEST_CASE("fuse-conv-bn declines when a folded weight overflows float16", "[fusion][fuse-conv-bn]") {
  test::conv_shape s;
  s.type = ir::data_type::float16;
  s.in_channels = 1;
  s.out_channels = 1;
  s.spatial = 1;
  s.bias = false;
  test::conv_model c = test::make_conv_model(s);
  ir::graph& g = c.m.graph();
  g.set_input(c.conv, 1, test::fixed_initializer(g, "big_w", s.type, {1, 1, 3}, {60000, 1, 1}));
  ir::node* bn = add_batch_norm(c, c.y, 1, "bn", s.type);
  g.set_input(bn, 1, test::fixed_initializer(g, "big_scale", s.type, {1}, {4}));
  g.set_input(bn, 4, test::fixed_initializer(g, "one_var", s.type, {1}, {1}));
  g.add_output(bn->output(0));
  require_declined(c.m, "declined-overflow");
}

TEST_CASE("fuse-conv-bn declines a conv whose bias does not match its channels", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  ir::graph& g = c.m.graph();
  g.set_input(c.conv, 2, test::fixed_initializer(g, "short_b", ir::data_type::float32, {5}, {0, 0, 0, 0, 0}));
  require_declined(c.m);
}

TEST_CASE("fuse-conv-bn declines a batch norm or conv outside the default domain", "[fusion][fuse-conv-bn]") {
  test::conv_model c = conv_bn({});
  SECTION("the batch norm") { c.m.graph().node_list().back()->set_domain("com.example"); }
  SECTION("the conv") { c.conv->set_domain("com.example"); }
  require_declined(c.m);
}
