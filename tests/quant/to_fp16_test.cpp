// to-fp16: float32 regions run in float16 with Casts at the boundaries.
//
// Numeric checks run in our executor on element-wise graphs only: its Conv, Gemm and
// BatchNormalization kernels are float32-only, so convolutional models are checked for
// structure here and for numbers through onnxruntime in tests/python/fp16_ort_test.py.
// Tolerance: float16 keeps 11 significant bits (relative step 2^-11, about 4.9e-4), and a
// chain of four rounding ops on O(1) values stays within a few steps, hence rtol 4e-3 and
// atol 1e-3 rather than the 1e-4 used for float32 folds.

#include "inferopt/quant/to_fp16.hpp"

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/quant/register.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"
#include "support/builtin_pipeline.hpp"

using namespace inferopt;

namespace {

constexpr double half_rtol = 4e-3;
constexpr double half_atol = 1e-3;

/// An independent copy, through the file format, to compare against after the pass.
ir::model copy_of(const ir::model& m) { return ir::parse_model(ir::serialize_model(m)); }

/// Runs a to-fp16 pipeline (with verify_each), checks the verifier, returns the pass record.
pass_record run(ir::model& m, std::string_view text = "to-fp16") {
  run_report r = test::run_builtin(m, text);
  CHECK(ir::find_problems(m.graph()).empty());
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// Runs the pass on a graph it must leave alone and checks that nothing changed.
void require_declined(ir::model& m, std::string_view text = "to-fp16") {
  const std::string before = test::bytes_of(m);
  pass_record r = run(m, text);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
}

/// x[2,8] -> Mul(scale) -> Add(bias) -> Sigmoid -> Relu -> y: every op has a float16 kernel
/// in our executor.
ir::model elementwise_chain() {
  ir::model m = ir::make_model("chain");
  ir::graph_builder b(m.graph(), 3);
  ir::value* x = b.input("x", ir::data_type::float32, {2, 8});
  ir::value* scaled = b.mul(x, b.random_constant("scale", {8}, 1.0f));
  ir::value* shifted = b.add(scaled, b.random_constant("bias", {8}, 0.5f));
  b.output(b.relu(b.sigmoid(shifted)));
  return m;
}

std::size_t initializers_of(const ir::graph& g, ir::data_type t) {
  std::size_t n = 0;
  for (const ir::value* v : g.initializers()) n += v->initializer()->dtype == t ? 1 : 0;
  return n;
}

ir::node* only_node(const ir::graph& g, std::string_view op) {
  ir::node* found = nullptr;
  for (ir::node* n : g.nodes()) {
    if (n->is(op)) {
      REQUIRE(found == nullptr);
      found = n;
    }
  }
  REQUIRE(found != nullptr);
  return found;
}

}  // namespace

TEST_CASE("to-fp16 converts an element-wise chain and keeps float32 graph inputs and outputs",
          "[quant][to-fp16]") {
  ir::model m = elementwise_chain();
  const ir::model before = copy_of(m);
  const std::vector<std::string> outputs = test::output_names(m.graph());

  pass_record r = run(m);
  CHECK(r.changed);
  CHECK(r.rewrites == 4);
  CHECK(r.counters.at("nodes-converted") == 4);
  CHECK(r.counters.at("casts-inserted") == 2);
  CHECK(r.counters.at("initializers-converted") == 2);
  CHECK(r.counters.at("clamped-values") == 0);
  const ir::graph& g = m.graph();
  CHECK(test::count_ops(g, "Cast") == 2);
  CHECK(initializers_of(g, ir::data_type::float16) == 2);
  CHECK(initializers_of(g, ir::data_type::float32) == 0);  // the originals are gone
  CHECK(test::output_names(g) == outputs);
  CHECK(g.inputs()[0]->elem_type() == ir::data_type::float32);
  CHECK(g.outputs()[0]->elem_type() == ir::data_type::float32);
  CHECK(only_node(g, "Relu")->output(0)->elem_type() == ir::data_type::float16);
  test::require_same_outputs(before, m, 7, half_rtol, half_atol);
}

TEST_CASE("to-fp16 converts a Conv-BN-ReLU network's weights and keeps topological order", "[quant][to-fp16]") {
  ir::model m = ir::make_default_model();
  const std::vector<std::string> outputs = test::output_names(m.graph());
  pass_record r = run(m);
  CHECK(r.changed);
  const ir::graph& g = m.graph();
  CHECK(test::output_names(g) == outputs);
  for (const ir::node* n : g.nodes()) {
    if (n->is("Conv")) {
      CHECK(n->input(0)->elem_type() == ir::data_type::float16);
      CHECK(n->input(1)->initializer()->dtype == ir::data_type::float16);
    }
  }
  // Left in float32: Dropout's ratio (typed T1, not T) and an initializer nothing reads.
  std::vector<std::string> float32_left;
  for (const ir::value* v : g.initializers()) {
    if (v->initializer()->dtype == ir::data_type::float32) float32_left.push_back(v->name());
  }
  CHECK(float32_left == std::vector<std::string>{"dropout_ratio", "unused_weights"});
  // The verifier run by the pipeline checks order; the boundary Casts are the only ones.
  CHECK(test::count_ops(g, "Cast") == g.inputs().size() + g.outputs().size());
}

TEST_CASE("to-fp16 leaves a blocked op in float32 with Casts around it", "[quant][to-fp16]") {
  ir::model m = elementwise_chain();
  const ir::model before = copy_of(m);
  pass_record r = run(m, "to-fp16{block-ops=Sigmoid}");
  CHECK(r.rewrites == 3);
  CHECK(r.counters.at("nodes-blocked") == 1);
  const ir::graph& g = m.graph();
  const ir::node* sigmoid = only_node(g, "Sigmoid");
  CHECK(sigmoid->input(0)->elem_type() == ir::data_type::float32);
  CHECK(sigmoid->input(0)->producer()->is("Cast"));
  CHECK(sigmoid->output(0)->uses().front().user->is("Cast"));
  CHECK(test::count_ops(g, "Cast") == 4);  // in, around Sigmoid (2), out
  test::require_same_outputs(before, m, 7, half_rtol, half_atol);
}

TEST_CASE("to-fp16 leaves a node named in block-nodes in float32", "[quant][to-fp16]") {
  ir::model m = elementwise_chain();
  only_node(m.graph(), "Relu")->set_name("keep_me");
  pass_record r = run(m, "to-fp16{block-nodes=keep_me;other}");
  CHECK(r.rewrites == 3);
  const ir::node* relu = only_node(m.graph(), "Relu");
  CHECK(relu->input(0)->elem_type() == ir::data_type::float32);
  CHECK(relu->output(0)->elem_type() == ir::data_type::float32);
  CHECK(test::count_ops(m.graph(), "Cast") == 2);  // in, before Relu; Relu's output is already float32
}

TEST_CASE("to-fp16 with keep-io-types=0 makes graph inputs and outputs float16 without Casts",
          "[quant][to-fp16]") {
  ir::model m = elementwise_chain();
  pass_record r = run(m, "to-fp16{keep-io-types=0}");
  CHECK(r.changed);
  const ir::graph& g = m.graph();
  CHECK(test::count_ops(g, "Cast") == 0);
  CHECK(g.inputs()[0]->elem_type() == ir::data_type::float16);
  CHECK(g.outputs()[0]->elem_type() == ir::data_type::float16);
}

TEST_CASE("to-fp16 clamps constants to the float16 range and counts them", "[quant][to-fp16]") {
  ir::model m = ir::make_model("clamp");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4});
  b.output(b.mul(x, b.constant("big", {4}, {1e6f, -1e6f, 65504.0f, 2.0f})));
  pass_record r = run(m);
  CHECK(r.counters.at("clamped-values") == 2);
  const ir::node* mul = only_node(m.graph(), "Mul");
  const ir::tensor* w = mul->input(1)->initializer();
  REQUIRE(w != nullptr);
  REQUIRE(w->dtype == ir::data_type::float16);
  const auto* bits = reinterpret_cast<const std::uint16_t*>(w->bytes->data());
  CHECK(bits[0] == 0x7bff);  // +65504
  CHECK(bits[1] == 0xfbff);  // -65504
  CHECK(bits[2] == 0x7bff);
  CHECK(bits[3] == 0x4000);  // 2.0
}

TEST_CASE("to-fp16 converts a Constant node's value attribute", "[quant][to-fp16]") {
  ir::model m = ir::make_model("constant_node");
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({3}));
  const std::vector<float> values{0.5f, 1.5f, -2.0f};
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_tensor("value", ir::tensor::from_values<float>("", {3}, values)));
  ir::node* c = test::add_op(g, "Constant", {}, "c", {}, std::move(attrs));
  ir::node* add = test::add_op(g, "Add", {x, c->output(0)}, "add");
  add->output(0)->set_type(test::float_type({3}));
  g.add_output(add->output(0));
  const ir::model before = copy_of(m);

  pass_record r = run(m);
  CHECK(r.rewrites == 2);
  CHECK(c->find_attribute("value")->tensors.front().dtype == ir::data_type::float16);
  CHECK(add->input(1) == c->output(0));  // no Cast between the Constant and the Add
  test::require_same_outputs(before, m, 7, half_rtol, half_atol);
}

TEST_CASE("to-fp16 gives a converted node its own float16 copy of an initializer a float32 node shares",
          "[quant][to-fp16]") {
  ir::model m = ir::make_model("shared");
  ir::graph_builder b(m.graph());
  ir::value* x = b.input("x", ir::data_type::float32, {4});
  ir::value* w = b.constant("w", {4}, {1.0f, 2.0f, 3.0f, 4.0f});
  ir::value* y = b.mul(x, w);
  b.output(y);
  ir::node* blocked = test::add_op(m.graph(), "Sub", {x, w}, "keep_sub");
  blocked->output(0)->set_type(test::float_type({4}));
  m.graph().add_output(blocked->output(0));

  pass_record r = run(m, "to-fp16{block-nodes=keep_sub}");
  CHECK(r.rewrites == 1);
  CHECK(blocked->input(1) == w);  // the original stays for its float32 reader
  CHECK(w->initializer()->dtype == ir::data_type::float32);
  CHECK(only_node(m.graph(), "Mul")->input(1)->initializer()->dtype == ir::data_type::float16);
}

TEST_CASE("to-fp16 run twice gives the graph of one run", "[quant][to-fp16]") {
  ir::model m = ir::make_default_model();
  run(m);
  const std::string once = test::bytes_of(m);
  require_declined(m);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("to-fp16 declines graphs it must not convert", "[quant][to-fp16]") {
  SECTION("a graph already in float16") {
    ir::model m = elementwise_chain();
    run(m, "to-fp16{keep-io-types=0}");
    require_declined(m);
  }
  SECTION("an op outside the default domain") {
    ir::model m = ir::make_model("custom");
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", test::float_type({2}));
    ir::node* n = test::add_op(g, "Relu", {x}, "relu", {}, {}, "com.example");
    n->output(0)->set_type(test::float_type({2}));
    g.add_output(n->output(0));
    require_declined(m);
  }
  SECTION("integer arithmetic") {
    ir::model m = ir::make_model("ints");
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", ir::value_type{true, ir::data_type::int64, ir::shape{2}});
    ir::node* n = test::add_op(g, "Add", {x, x}, "add");
    n->output(0)->set_type(ir::value_type{true, ir::data_type::int64, ir::shape{2}});
    g.add_output(n->output(0));
    require_declined(m);
  }
  SECTION("every float op blocked") {
    ir::model m = elementwise_chain();
    require_declined(m, "to-fp16{block-ops=Mul;Add;Sigmoid;Relu}");
  }
  SECTION("an op the pass does not know") {
    ir::model m = ir::make_model("unknown");
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", test::float_type({2}));
    ir::node* n = test::add_op(g, "Hardmax", {x}, "hardmax");
    n->output(0)->set_type(test::float_type({2}));
    g.add_output(n->output(0));
    require_declined(m);
  }
  SECTION("Equal below opset 11, which has no float16 Equal") {
    ir::model m = ir::make_model("equal", 10);
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", test::float_type({2}));
    ir::node* n = test::add_op(g, "Equal", {x, x}, "equal");
    n->output(0)->set_type(ir::value_type{true, ir::data_type::boolean, ir::shape{2}});
    g.add_output(n->output(0));
    require_declined(m);
  }
  SECTION("an input whose element type is unknown") {
    ir::model m = ir::make_model("untyped");
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", std::nullopt);
    ir::node* n = test::add_op(g, "Relu", {x}, "relu");
    g.add_output(n->output(0));
    require_declined(m);
  }
  SECTION("a node whose output a subgraph reads") {
    ir::model m = ir::make_model("nested");
    ir::graph& g = m.graph();
    ir::value* x = g.add_input("x", test::float_type({2}));
    ir::value* cond = g.add_initializer("cond", test::bool_scalar(true));
    ir::node* relu = test::add_op(g, "Relu", {x}, "relu");
    relu->output(0)->set_type(test::float_type({2}));
    ir::node* branch = test::add_if_with_identities(g, cond, relu->output(0), "if");
    branch->output(0)->set_type(test::float_type({2}));
    g.add_output(branch->output(0));
    require_declined(m);
  }
}

/// A LayerNorm written out as ops, as exporters below opset 17 write it, over activations of
/// a few hundred (a transformer's residual stream): (x - mean) / sqrt(mean((x - mean)^2) + eps).
ir::model decomposed_layer_norm() {
  ir::model m = ir::make_model("decomposed_layer_norm", 17);
  ir::graph_builder b(m.graph(), 9);
  ir::value* x = b.mul(b.input("x", ir::data_type::float32, {2, 16}), b.constant("gain", {}, {400.0f}));
  std::vector<ir::attribute> last_axis;
  last_axis.push_back(ir::attribute::make_ints("axes", {-1}));
  ir::value* centered = b.op("Sub", {x, b.op("ReduceMean", {x}, std::move(last_axis))});
  ir::value* square = b.op("Pow", {centered, b.constant("two", {}, {2.0f})});
  std::vector<ir::attribute> axes;
  axes.push_back(ir::attribute::make_ints("axes", {-1}));
  ir::value* variance = b.op("ReduceMean", {square}, std::move(axes));
  ir::value* deviation = b.op("Sqrt", {b.add(variance, b.constant("eps", {}, {1e-5f}))});
  b.output(b.op("Div", {centered, deviation}));
  return m;
}

TEST_CASE("to-fp16 keeps a written-out normalization's squares and their mean in float32", "[quant][to-fp16]") {
  ir::model m = decomposed_layer_norm();
  const ir::model before = copy_of(m);
  pass_record r = run(m);
  CHECK(r.counters.at("norm-statistics-kept") >= 1);
  // float16 up to the centring, float32 from the square to the standard deviation, float16
  // for the division: Casts at both ends of the statistics.
  const ir::node* pow = only_node(m.graph(), "Pow");
  REQUIRE(pow->input(0)->producer());
  CHECK(pow->input(0)->producer()->is("Cast"));
  CHECK(pow->input(0)->producer()->attr_int("to", 0) == static_cast<std::int64_t>(ir::data_type::float32));
  const ir::node* div = only_node(m.graph(), "Div");
  REQUIRE(div->input(1)->producer());
  CHECK(div->input(1)->producer()->is("Cast"));
  CHECK(div->input(1)->producer()->input(0)->producer()->is("Sqrt"));
  test::require_same_outputs(before, m, 7, half_rtol, half_atol);

  // Without it the squares (up to 160000) overflow float16's 65504 and the output collapses.
  ir::model all_half = decomposed_layer_norm();
  (void)run(all_half, "to-fp16{keep-norm-statistics=0}");
  runtime::session a(before, runtime::session_options{.threads = 1});
  runtime::session h(all_half, runtime::session_options{.threads = 1});
  const runtime::tensor_map feed = runtime::random_inputs(a, 7);
  const auto want = a.run(feed).begin()->second.values<float>();
  const auto got = h.run(feed).begin()->second.values<float>();
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(want[i]) - got[i]));
  CHECK(worst > 0.5);
}

TEST_CASE("to-fp16 parses its options and prints them back", "[quant][to-fp16]") {
  to_fp16 p;
  CHECK(p.options().empty());
  p.set_option("keep-io-types", "false");
  p.set_option("block-ops", "TopK; Resize;");
  p.set_option("block-nodes", "a;b");
  p.set_option("keep-norm-statistics", "0");
  CHECK(p.options() == std::map<std::string, std::string>{{"keep-io-types", "0"},
                                                          {"block-ops", "Resize;TopK"},
                                                          {"block-nodes", "a;b"},
                                                          {"keep-norm-statistics", "0"}});
  const auto bad_flag = test::error_from([&] { p.set_option("keep-io-types", "maybe"); });
  REQUIRE(bad_flag);
  CHECK(bad_flag->code() == errc::invalid_argument);
  CHECK(test::error_from([&] { p.set_option("ratio", "1"); }));
  CHECK(to_fp16::default_blocked_ops().contains("TopK"));
}

TEST_CASE("to-fp16 is registered with the quant passes", "[quant][to-fp16]") {
  pass_registry registry;
  register_quant_passes(registry);
  CHECK(registry.contains("to-fp16"));
}

TEST_CASE("to-fp16 converts an IR 3 initializer listed as a graph input and drops the float32 original",
          "[quant][to-fp16]") {
  ir::model m = ir::make_model("ir3");
  m.ir_version = 3;  // every initializer is listed as an input, and none of them is a feed
  ir::graph& g = m.graph();
  ir::value* x = g.add_input("x", test::float_type({2}));
  ir::value* w = g.add_input("w", test::float_type({2}));
  g.set_initializer(w, ir::tensor::from_values<float>("w", {2}, std::vector<float>{0.25f, -3.0f}));
  ir::node* mul = test::add_op(g, "Mul", {x, w}, "mul");
  mul->output(0)->set_type(test::float_type({2}));
  g.add_output(mul->output(0));
  const ir::model before = copy_of(m);

  pass_record r = run(m);
  CHECK(r.rewrites == 1);
  CHECK(g.find_value("w") == nullptr);
  CHECK(mul->input(1)->initializer()->dtype == ir::data_type::float16);
  test::require_same_outputs(before, m, 7, half_rtol, half_atol);
}
