// fuse-conv-activation: Conv [+ Add Z] + activation becomes com.microsoft FusedConv.
//
// Numbers: the executor runs the model before and after on the same random inputs
// (require_same_outputs, rtol 1e-4): FusedConv sums the same float32 products as Conv and only
// adds Z before the product instead of after, so the outputs agree to float rounding.

#include "inferopt/fusion/fuse_conv_activation.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <limits>

#include "fusion_test_util.hpp"
#include "support/conv_attributes.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"

using namespace inferopt;

namespace {

using body = std::function<ir::value*(ir::graph_builder&, ir::value* x)>;

/// A model `x [1,4,8,8] -> body -> y` at `opset`; built the same way (seeded) on every call.
ir::model make(const body& f, std::int64_t opset = 17) {
  ir::model m = ir::make_model("conv_act", opset);
  ir::graph_builder gb(m.graph(), 11);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{1}, ir::dim{4}, ir::dim{8}, ir::dim{8}});
  gb.output(f(gb, x));
  return m;
}

pass_record run(ir::model& m) {
  run_report r = test::run_builtin(m, "fuse-conv-activation");
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK_NOTHROW(ir::verify(m.graph()));
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// The model's only FusedConv node.
const ir::node& fused_node(const ir::model& m) {
  const ir::node* found = nullptr;
  for (const ir::node* n : m.graph().nodes()) {
    if (n->op_type() == "FusedConv" && n->domain() == "com.microsoft") {
      REQUIRE(found == nullptr);
      found = n;
    }
  }
  REQUIRE(found != nullptr);
  return *found;
}

std::vector<float> floats_of(const ir::node& n, std::string_view name) {
  const ir::attribute* a = n.find_attribute(name);
  return a ? a->floats : std::vector<float>{};
}

/// Fuses `f`'s model and checks it against the unfused one; returns the fused model.
ir::model require_fused(const body& f, std::int64_t opset = 17) {
  ir::model before = make(f, opset), after = make(f, opset);
  const pass_record r = run(after);
  CHECK(r.changed);
  CHECK(r.rewrites == 1);
  CHECK(test::count_ops(after.graph(), "Conv") == 0);
  CHECK(after.opset("com.microsoft") == std::optional<std::int64_t>(1));
  CHECK(test::output_names(after.graph()) == test::output_names(before.graph()));
  test::require_same_outputs(before, after);
  return after;
}

/// Runs the pass on a model it must decline, checks that nothing changed and returns the
/// pass's record (its counters say why it declined).
pass_record require_declined(ir::model m) {
  const std::string before = test::bytes_of(m);
  const pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
  return r;
}

ir::value* conv(ir::graph_builder& gb, ir::value* x) { return gb.conv(x, 6); }

}  // namespace

TEST_CASE("fuse-conv-activation folds each activation ORT accepts into FusedConv", "[fusion][fuse-conv-activation]") {
  using row = std::tuple<std::string, std::vector<float>>;
  const auto [op, params] = GENERATE(table<std::string, std::vector<float>>({
      row{"Relu", {}},
      row{"LeakyRelu", {0.2f}},
      row{"Tanh", {}},
      row{"Sigmoid", {}},
      row{"Clip", {-0.25f, 0.5f}},
      row{"HardSigmoid", {0.3f, 0.4f}},
      row{"HardSwish", {}},
  }));
  CAPTURE(op);
  const body f = [&](ir::graph_builder& gb, ir::value* x) -> ir::value* {
    ir::value* c = conv(gb, x);
    if (op == "LeakyRelu") return gb.leaky_relu(c, params[0]);
    if (op == "Clip") return gb.clip(c, params[0], params[1]);
    if (op == "HardSigmoid") {
      std::vector<ir::attribute> attrs;
      attrs.push_back(ir::attribute::make_float("alpha", params[0]));
      attrs.push_back(ir::attribute::make_float("beta", params[1]));
      return gb.op(op, {c}, std::move(attrs));
    }
    return gb.op(op, {c});
  };
  const ir::model after = require_fused(f);
  CHECK(after.graph().node_count() == 1);
  const ir::node& n = fused_node(after);
  CHECK(n.attr_string("activation", "") == op);
  CHECK(floats_of(n, "activation_params") == params);
  CHECK(n.inputs().size() == 3);  // X, W, B: no Z
}

TEST_CASE("fuse-conv-activation reads Clip's attribute bounds before opset 11", "[fusion][fuse-conv-activation]") {
  const body f = [](ir::graph_builder& gb, ir::value* x) {
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_float("min", 0.0f));
    attrs.push_back(ir::attribute::make_float("max", 6.0f));
    return gb.op("Clip", {conv(gb, x)}, std::move(attrs));
  };
  const ir::model after = require_fused(f, 10);
  CHECK(floats_of(fused_node(after), "activation_params") == std::vector<float>{0.0f, 6.0f});
}

TEST_CASE("fuse-conv-activation takes an absent Clip bound as unbounded", "[fusion][fuse-conv-activation]") {
  const body f = [](ir::graph_builder& gb, ir::value* x) {
    return gb.op("Clip", {conv(gb, x), gb.constant("lo", {}, {0.0f})});
  };
  const ir::model after = require_fused(f);
  const std::vector<float> params = floats_of(fused_node(after), "activation_params");
  REQUIRE(params.size() == 2);
  CHECK(params[0] == 0.0f);
  CHECK(params[1] == std::numeric_limits<float>::max());
}

/// A residual of the conv output's shape [1,6,8,8], computed (Neg of a second input) after
/// whatever the body built so far: a fused node left at the Conv's place would read it early.
ir::value* late_residual(ir::graph_builder& gb) {
  ir::value* r = gb.input("r", ir::data_type::float32, ir::shape{ir::dim{1}, ir::dim{6}, ir::dim{8}, ir::dim{8}});
  ir::value* z = gb.op("Neg", {r});
  z->set_type(r->type());
  return z;
}

TEST_CASE("fuse-conv-activation turns a residual Add and its activation into FusedConv's Z", "[fusion][fuse-conv-activation]") {
  const bool conv_first = GENERATE(true, false);
  CAPTURE(conv_first);
  const body f = [&](ir::graph_builder& gb, ir::value* x) {
    ir::value* c = conv(gb, x);
    ir::value* z = late_residual(gb);
    return gb.relu(conv_first ? gb.add(c, z) : gb.add(z, c));
  };
  const ir::model after = require_fused(f);
  CHECK(test::count_ops(after.graph(), "Add") == 0);
  CHECK(test::count_ops(after.graph(), "Relu") == 0);
  const ir::node& n = fused_node(after);
  CHECK(n.attr_string("activation", "") == "Relu");
  REQUIRE(n.inputs().size() == 4);
  REQUIRE(n.input(3) != nullptr);
  CHECK(n.input(3)->producer() != nullptr);
  CHECK(n.input(3)->producer()->is("Neg"));
}

/// x ["batch", 4, 8, 8] -> Conv -> Add(r ["batch" or `other`, 6, 8, 8]) -> Relu, types as shape
/// inference gives them to a dynamic-batch export.
ir::model symbolic_batch_residual(const std::string& residual_batch) {
  ir::model m = ir::make_model("conv_act", 17);
  ir::graph_builder gb(m.graph(), 11);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{"batch"}, ir::dim{4}, ir::dim{8}, ir::dim{8}});
  ir::node* conv = test::add_op(m.graph(), "Conv", {x, gb.random_constant("w", {6, 4, 3, 3}, 0.3f), gb.random_constant("b", {6}, 0.3f)},
                                "conv", {}, test::square_conv_attributes(3, 1, 1, 1, 1));
  ir::value* c = conv->output(0);
  c->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{ir::dim{"batch"}, ir::dim{6}, ir::dim{8}, ir::dim{8}}});
  ir::value* r = gb.input("r", ir::data_type::float32, ir::shape{ir::dim{residual_batch}, ir::dim{6}, ir::dim{8}, ir::dim{8}});
  gb.output(gb.relu(gb.add(c, r)));
  return m;
}

TEST_CASE("fuse-conv-activation folds a residual whose batch dim is the same symbolic name", "[fusion][fuse-conv-activation]") {
  ir::model m = symbolic_batch_residual("batch");
  const ir::model before = test::copy_of(m);
  run(m);
  CHECK(test::count_ops(m.graph(), "Add") == 0);
  REQUIRE(fused_node(m).inputs().size() == 4);
  test::require_same_outputs(before, m);

  ir::model other = symbolic_batch_residual("other");
  const pass_record r = run(other);
  CHECK(r.counters.at("declined-residual-shape") == 1);
  CHECK(test::count_ops(other.graph(), "Add") == 1);
}

TEST_CASE("fuse-conv-activation folds a residual Add without an activation", "[fusion][fuse-conv-activation]") {
  const body f = [](ir::graph_builder& gb, ir::value* x) {
    ir::value* c = gb.conv(x, 6, ir::conv_options{.bias = false});
    return gb.add(c, late_residual(gb));
  };
  const ir::model after = require_fused(f);
  const ir::node& n = fused_node(after);
  CHECK(n.find_attribute("activation") == nullptr);
  REQUIRE(n.inputs().size() == 4);
  CHECK(n.input(2) == nullptr);  // no bias: B is omitted, Z stays input 3
  CHECK(n.input(3) != nullptr);
}

TEST_CASE("fuse-conv-activation keeps the name of a graph output it absorbs", "[fusion][fuse-conv-activation]") {
  const body f = [](ir::graph_builder& gb, ir::value* x) { return gb.relu(conv(gb, x)); };
  const ir::model after = require_fused(f);
  CHECK(fused_node(after).output(0)->is_graph_output());
}

TEST_CASE("fuse-conv-activation gives the same graph when run twice", "[fusion][fuse-conv-activation]") {
  const body f = [](ir::graph_builder& gb, ir::value* x) {
    ir::value* a = gb.relu(conv(gb, x));
    return gb.tanh(gb.add(gb.conv(a, 6), late_residual(gb)));
  };
  ir::model m = make(f);
  run(m);
  CHECK(test::count_ops(m.graph(), "Conv") == 0);
  const std::string once = test::bytes_of(m);
  const pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("fuse-conv-activation declines what FusedConv cannot express", "[fusion][fuse-conv-activation]") {
  SECTION("a Conv output read by two nodes") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* c = conv(gb, x);
      return gb.add(gb.relu(c), gb.sigmoid(c));
    }));
  }
  SECTION("a Conv output that is also a graph output") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* c = conv(gb, x);
      gb.output(c);
      return gb.relu(c);
    }));
  }
  SECTION("a float64 Conv") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(conv(gb, x)); });
    for (ir::node* n : m.graph().nodes()) {
      for (ir::value* v : n->outputs()) {
        if (v->type()) v->set_type(ir::value_type{true, ir::data_type::float64, v->type()->dims});
      }
    }
    require_declined(std::move(m));
  }
  SECTION("a Conv with an attribute FusedConv does not have") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(conv(gb, x)); });
    for (ir::node* n : m.graph().nodes()) {
      if (n->is("Conv")) n->set_attribute(ir::attribute::make_string("custom_hint", "x"));
    }
    require_declined(std::move(m));
  }
  SECTION("a model that imports another com.microsoft version") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(conv(gb, x)); });
    m.opsets.push_back({"com.microsoft", 2});
    require_declined(std::move(m));
  }
  SECTION("a Conv inside a QDQ group (int8 kernels take DequantizeLinear -> Conv -> Relu -> QuantizeLinear whole)") {
    const pass_record r = require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* scale = gb.constant("s", {}, {0.1f});
      ir::value* q = gb.op("QuantizeLinear", {x, scale});
      ir::value* w = gb.random_constant("w", {6, 4, 3, 3}, 0.1f);
      return gb.relu(gb.op("Conv", {gb.op("DequantizeLinear", {q, scale}), w}));
    }));
    CHECK(r.counters.at("declined-qdq-group") == 1);
  }
  SECTION("an activation FusedConv does not know") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) { return gb.op("Elu", {conv(gb, x)}); }));
  }
  SECTION("a Clip whose bound is not a constant") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* lo = gb.input("lo", ir::data_type::float32, ir::shape{});
      return gb.op("Clip", {conv(gb, x), lo});
    }));
  }
  SECTION("a Clip whose min exceeds its max") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) { return gb.clip(conv(gb, x), 1.0f, -1.0f); }));
  }
  SECTION("a Clip in input form at opset 10") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) { return gb.clip(conv(gb, x), 0.0f, 6.0f); }, 10));
  }
  SECTION("a residual that broadcasts") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      return gb.relu(gb.add(conv(gb, x), gb.random_constant("z", {1, 6, 1, 1}, 1.0f)));
    }));
  }
  SECTION("an output name that a subgraph already defines") {
    // The If's branches define their own `y` (legal: the outer `y` comes after the If).
    // Giving the Conv output the name `y` would shadow it, so the pass must decline.
    ir::model m = ir::make_model("shadow");
    ir::graph& g = m.graph();
    ir::graph_builder gb(g, 11);
    ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{1}, ir::dim{4}, ir::dim{8}, ir::dim{8}});
    ir::value* c = conv(gb, x);
    ir::value* cond = g.add_input("cond", ir::value_type{true, ir::data_type::boolean, ir::shape{}});
    std::vector<ir::attribute> attrs;
    attrs.push_back(test::graph_attribute("then_branch", std::make_unique<ir::graph>("then")));
    attrs.push_back(test::graph_attribute("else_branch", std::make_unique<ir::graph>("else")));
    ir::node* n = g.add_node(ir::node_spec{"If", {cond}, {"if_out"}, std::move(attrs), "if", {}});
    for (ir::graph* branch : n->subgraphs()) {
      branch->add_output(test::add_op(*branch, "Neg", {x}, branch->name() + "_neg", {"y"})->output(0));
    }
    ir::node* relu = test::add_op(g, "Relu", {c}, "relu", {"y"});
    g.add_output(n->output(0));
    g.add_output(relu->output(0));
    CHECK(require_declined(std::move(m)).counters.count("declined-output-name") == 1);
  }
  SECTION("a residual of unknown shape") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* z = gb.op("Neg", {gb.input("r", ir::data_type::float32, ir::shape{ir::dim{1}, ir::dim{6}, ir::dim{8}, ir::dim{8}})});
      return gb.add(conv(gb, x), z);
    }));
  }
}
