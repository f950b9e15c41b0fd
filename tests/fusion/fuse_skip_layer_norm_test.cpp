// fuse-skip-layer-norm: a residual Add (and a bias Add) with the norm it feeds becomes
// com.microsoft SkipLayerNormalization or SkipSimplifiedLayerNormalization.
//
// Numbers: the executor runs the model before (Add, LayerNormalization / RMSNormalization)
// and after (our Skip*LayerNormalization kernels) on the same random inputs
// (require_same_outputs, rtol 1e-4).

#include "inferopt/fusion/fuse_skip_layer_norm.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/shape_inference.hpp"

using namespace inferopt;

namespace {

constexpr std::int64_t batch = 2, seq = 3, hidden = 8;

struct residual_form {
  bool rms = false;             ///< RMSNormalization (opset 23) instead of LayerNormalization
  bool bias = false;            ///< x = Add(y, bias) first
  bool bias_first = false;      ///< Add(bias, y) rather than Add(y, bias)
  bool skip_first = false;      ///< Add(skip, x) rather than Add(x, skip)
  bool sum_read_on = false;     ///< the sum also feeds the next residual (pre-LN blocks)
  bool beta = true;             ///< LayerNormalization has its B input
  std::vector<std::int64_t> skip_dims{batch, seq, hidden};
};

ir::model make(const residual_form& form) {
  ir::model m = ir::make_model("residual", form.rms ? 23 : 17);
  ir::graph_builder gb(m.graph(), 11);
  const auto dims = [](std::vector<std::int64_t> d) { return ir::shape(d.begin(), d.end()); };
  ir::value* x = gb.input("x", ir::data_type::float32, dims({batch, seq, hidden}));
  ir::value* skip = gb.input("skip", ir::data_type::float32, dims(form.skip_dims));
  if (form.bias) {
    ir::value* b = gb.random_constant("bias", {hidden}, 0.5f);
    x = form.bias_first ? gb.add(b, x) : gb.add(x, b);
  }
  ir::value* sum = form.skip_first ? gb.add(skip, x) : gb.add(x, skip);
  std::vector<ir::value*> in{sum, gb.random_constant("gamma", {hidden}, 1.0f)};
  if (form.beta && !form.rms) in.push_back(gb.random_constant("beta", {hidden}, 0.5f));
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("epsilon", 1e-6f));
  ir::value* y = gb.op(form.rms ? "RMSNormalization" : "LayerNormalization", in, std::move(attrs));
  gb.output(form.sum_read_on ? gb.add(y, sum) : y);
  (void)ir::infer_shapes(m);
  return m;
}

const ir::node* the_fused(const ir::model& m) {
  for (const ir::node* n : m.graph().nodes()) {
    if (n->op_type().starts_with("Skip")) return n;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("fuse-skip-layer-norm fuses the residual Add, a bias Add and the norm", "[fusion][fuse-skip-layer-norm]") {
  residual_form form;
  form.rms = GENERATE(false, true);
  form.bias = GENERATE(false, true);
  form.bias_first = GENERATE(false, true);
  form.skip_first = GENERATE(false, true);
  form.sum_read_on = GENERATE(false, true);
  CAPTURE(form.rms, form.bias, form.bias_first, form.skip_first, form.sum_read_on);
  ir::model m = make(form);
  const pass_record r = test::pass_checker("fuse-skip-layer-norm").run_and_compare(m);
  CHECK(r.rewrites == 1);
  const ir::node* fused = the_fused(m);
  REQUIRE(fused);
  CHECK(fused->op_type() == (form.rms ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization"));
  CHECK(fused->attr_float("epsilon", 0.0f) == Approx(1e-6f));
  CHECK(fused->inputs().size() == (form.rms ? 3u : 4u) + (form.bias ? 1u : 0u));
  CHECK(fused->outputs().size() == (form.sum_read_on ? 4u : 1u));
  CHECK(test::count_op_type(m, "Add") == (form.sum_read_on ? 1u : 0u));
}

TEST_CASE("fuse-skip-layer-norm takes a skip broadcast over the batch and a norm without beta",
          "[fusion][fuse-skip-layer-norm]") {
  residual_form form;
  form.skip_dims = GENERATE(std::vector<std::int64_t>{1, seq, hidden}, std::vector<std::int64_t>{seq, hidden});
  form.beta = GENERATE(true, false);
  ir::model m = make(form);
  const pass_record r = test::pass_checker("fuse-skip-layer-norm").run_and_compare(m);
  CHECK(r.rewrites == 1);
}

TEST_CASE("fuse-skip-layer-norm declines a skip it cannot broadcast, a read statistic and a sum that is a graph output",
          "[fusion][fuse-skip-layer-norm]") {
  const test::pass_checker checker("fuse-skip-layer-norm");
  SECTION("a skip broadcast over the sequence") {
    residual_form form;
    form.skip_dims = {batch, 1, hidden};
    ir::model m = make(form);
    CHECK(checker.require_declined(m).counters.at("declined-skip-shape") == 1);
  }
  SECTION("the sum read elsewhere and a graph output") {
    residual_form form;
    form.sum_read_on = true;
    ir::model m = make(form);
    for (const ir::node* n : m.graph().nodes()) {
      if (n->is("Add") && n->output(0)->uses().size() == 2) m.graph().add_output(n->output(0));
    }
    CHECK(checker.require_declined(m).counters.at("declined-output-name") == 1);
  }
}
