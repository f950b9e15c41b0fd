// fuse-layer-norm: LayerNorm and RMSNorm written out become LayerNormalization (opset 17) or
// RMSNormalization (opset 23). Numbers: the executor before and after on the same random
// inputs (require_same_outputs, rtol 1e-4); both accumulate the moments in double.

#include "inferopt/fusion/fuse_layer_norm.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"

using namespace inferopt;

namespace {

constexpr std::int64_t batch = 2, seq = 3, hidden = 8;

struct norm_form {
  bool rms = false;
  std::int64_t opset = 17;
  bool pow = true;              ///< Pow(d, 2), else Mul(d, d)
  bool reciprocal = false;      ///< Mul(d, Reciprocal(sd)), else Div(d, sd)
  bool gamma = true;
  bool beta = true;
  bool gamma_first = false;     ///< Mul(gamma, n)
  std::vector<std::int64_t> axes{-1};
  std::vector<std::int64_t> mean_axes{-1};
  float epsilon = 1e-5f;
};

ir::value* reduce_mean(ir::graph_builder& gb, ir::value* x, const std::vector<std::int64_t>& axes, std::int64_t opset) {
  if (opset >= 18) {
    return gb.op("ReduceMean", {x, gb.constant_i64("axes", {static_cast<std::int64_t>(axes.size())}, axes)});
  }
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("axes", axes));
  return gb.op("ReduceMean", {x}, std::move(attrs));
}

ir::model make(const norm_form& f) {
  ir::model m = ir::make_model("norm", f.opset);
  ir::graph_builder gb(m.graph(), 9);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{batch}, ir::dim{seq}, ir::dim{hidden}});
  ir::value* d = f.rms ? x : gb.op("Sub", {x, reduce_mean(gb, x, f.mean_axes, f.opset)});
  ir::value* sq = f.pow ? gb.op("Pow", {d, gb.constant("two", {}, {2.0f})}) : gb.mul(d, d);
  ir::value* sd = gb.op("Sqrt", {gb.add(reduce_mean(gb, sq, f.axes, f.opset), gb.constant("eps", {}, {f.epsilon}))});
  ir::value* n = f.reciprocal ? gb.mul(d, gb.op("Reciprocal", {sd})) : gb.op("Div", {d, sd});
  const std::vector<std::int64_t> normalized = f.axes.size() == 2 ? std::vector<std::int64_t>{seq, hidden}
                                                                  : std::vector<std::int64_t>{hidden};
  if (f.gamma) {
    ir::value* g = gb.random_constant("gamma", normalized, 1.0f);
    n = f.gamma_first ? gb.mul(g, n) : gb.mul(n, g);
  }
  if (f.beta && !f.rms) n = gb.add(n, gb.random_constant("beta", normalized, 0.5f));
  gb.output(n);
  (void)ir::infer_shapes(m);
  return m;
}

}  // namespace

TEST_CASE("fuse-layer-norm fuses LayerNorm written out, in the forms exporters write", "[fusion][fuse-layer-norm]") {
  norm_form f;
  f.opset = GENERATE(17, 18);
  f.pow = GENERATE(true, false);
  f.reciprocal = GENERATE(false, true);
  f.gamma = GENERATE(true, false);
  f.beta = GENERATE(true, false);
  f.gamma_first = GENERATE(false, true);
  CAPTURE(f.opset, f.pow, f.reciprocal, f.gamma, f.beta, f.gamma_first);
  ir::model m = make(f);
  const pass_record r = test::pass_checker("fuse-layer-norm").run_and_compare(m);
  CHECK(r.rewrites == 1);
  const ir::node& n = test::only_node(m);
  CHECK(n.op_type() == "LayerNormalization");
  CHECK(n.attr_int("axis", 0) == 2);
  CHECK(n.attr_float("epsilon", 0.0f) == Approx(1e-5f));
  CHECK(n.inputs().size() == (f.beta && f.gamma ? 3u : 2u) + (f.beta && !f.gamma ? 1u : 0u));
}

TEST_CASE("fuse-layer-norm fuses a norm over the last two axes", "[fusion][fuse-layer-norm]") {
  norm_form f;
  f.axes = f.mean_axes = GENERATE(std::vector<std::int64_t>{-2, -1}, std::vector<std::int64_t>{2, 1});
  ir::model m = make(f);
  test::pass_checker("fuse-layer-norm").run_and_compare(m);
  CHECK(test::only_node(m).attr_int("axis", 0) == 1);
}

TEST_CASE("fuse-layer-norm fuses RMSNorm to RMSNormalization from opset 23", "[fusion][fuse-layer-norm]") {
  norm_form f;
  f.rms = true;
  f.opset = 23;
  f.reciprocal = GENERATE(false, true);
  f.gamma = GENERATE(true, false);
  ir::model m = make(f);
  test::pass_checker("fuse-layer-norm").run_and_compare(m);
  CHECK(test::only_node(m).op_type() == "RMSNormalization");
}

TEST_CASE("fuse-layer-norm declines what the ops cannot say", "[fusion][fuse-layer-norm]") {
  const test::pass_checker checker("fuse-layer-norm");
  SECTION("RMSNorm below opset 23") {
    norm_form f;
    f.rms = true;
    ir::model m = make(f);
    CHECK(checker.require_declined(m).counters.at("declined-opset") == 1);
  }
  SECTION("mean and variance over different axes") {
    norm_form f;
    f.axes = {-2, -1};
    ir::model m = make(f);
    CHECK(checker.require_declined(m).counters.at("declined-axes") == 1);
  }
  SECTION("axes that are not trailing") {
    norm_form f;
    f.axes = f.mean_axes = {1};
    ir::model m = make(f);
    CHECK(checker.require_declined(m).counters.at("declined-axes") == 1);
  }
  SECTION("a negative epsilon") {
    norm_form f;
    f.epsilon = -1e-5f;
    ir::model m = make(f);
    CHECK(checker.require_declined(m).counters.at("declined-epsilon") == 1);
  }
  SECTION("x - mean read elsewhere") {
    norm_form f;
    ir::model m = make(f);
    for (ir::node* n : m.graph().nodes()) {
      if (n->is("Sub")) m.graph().add_output(n->output(0));
    }
    checker.require_declined(m);
  }
}

TEST_CASE("with its com.microsoft option fuse-layer-norm writes onnxruntime's SimplifiedLayerNormalization below opset 23",
          "[fusion][fuse-layer-norm]") {
  norm_form f;
  f.rms = true;
  f.opset = GENERATE(17, 20);
  ir::model m = make(f);
  test::pass_checker("fuse-layer-norm{domain=com.microsoft}").run_and_compare(m);
  CHECK(test::only_node(m).op_type() == "SimplifiedLayerNormalization");
  CHECK(test::only_node(m).is_onnx_domain());
}
