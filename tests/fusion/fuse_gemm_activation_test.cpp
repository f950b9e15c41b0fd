// fuse-gemm-activation: Gemm + activation becomes com.microsoft FusedGemm.
//
// Numbers: the executor runs the model before and after on the same random inputs
// (require_same_outputs, rtol 1e-4): FusedGemm runs the same products as Gemm and applies the
// same activation formula, so the outputs agree to float rounding.

#include "inferopt/fusion/fuse_gemm_activation.hpp"

#include <catch2/catch.hpp>

#include <functional>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"

using namespace inferopt;

namespace {

using body = std::function<ir::value*(ir::graph_builder&, ir::value* x)>;

/// A model `x [3,16] -> body -> y`; built the same way (seeded) on every call.
ir::model make(const body& f) {
  ir::model m = ir::make_model("gemm_act");
  ir::graph_builder gb(m.graph(), 5);
  ir::value* x = gb.input("x", ir::data_type::float32, ir::shape{ir::dim{3}, ir::dim{16}});
  gb.output(f(gb, x));
  return m;
}

pass_record run(ir::model& m) {
  run_report r = test::run_builtin(m, "fuse-gemm-activation");
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK_NOTHROW(ir::verify(m.graph()));
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

void require_declined(ir::model m) {
  const std::string before = test::bytes_of(m);
  const pass_record r = run(m);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
}

ir::value* hard_sigmoid(ir::graph_builder& gb, ir::value* x) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_float("alpha", 0.3f));
  attrs.push_back(ir::attribute::make_float("beta", 0.4f));
  return gb.op("HardSigmoid", {x}, std::move(attrs));
}

}  // namespace

TEST_CASE("fuse-gemm-activation folds each activation FusedGemm accepts", "[fusion][fuse-gemm-activation]") {
  const std::string op = GENERATE(as<std::string>{}, "Relu", "LeakyRelu", "Tanh", "Sigmoid", "HardSigmoid");
  CAPTURE(op);
  const body f = [&](ir::graph_builder& gb, ir::value* x) -> ir::value* {
    ir::value* y = gb.gemm(x, 8);
    if (op == "LeakyRelu") return gb.leaky_relu(y, 0.2f);
    if (op == "HardSigmoid") return hard_sigmoid(gb, y);
    return gb.op(op, {y});
  };
  ir::model before = make(f), after = make(f);
  const pass_record r = run(after);
  CHECK(r.rewrites == 1);
  REQUIRE(after.graph().node_count() == 1);
  const ir::node& n = **after.graph().nodes().begin();
  CHECK(n.op_type() == "FusedGemm");
  CHECK(n.domain() == "com.microsoft");
  CHECK(n.attr_string("activation", "") == op);
  if (op == "LeakyRelu") CHECK(n.attr_float("activation_alpha", 0.0f) == 0.2f);
  if (op == "HardSigmoid") {
    CHECK(n.attr_float("activation_alpha", 0.0f) == 0.3f);
    CHECK(n.attr_float("activation_beta", 0.0f) == 0.4f);
  }
  CHECK(n.attr_int("transB", 0) == 1);  // Gemm's own attributes stay
  CHECK(after.opset("com.microsoft") == std::optional<std::int64_t>(1));
  CHECK(test::output_names(after.graph()) == test::output_names(before.graph()));
  test::require_same_outputs(before, after);
}

TEST_CASE("fuse-gemm-activation gives the same graph when run twice", "[fusion][fuse-gemm-activation]") {
  ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.tanh(gb.gemm(gb.relu(gb.gemm(x, 8)), 4)); });
  CHECK(run(m).rewrites == 2);
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m).changed);
  CHECK(test::bytes_of(m) == once);
}

TEST_CASE("fuse-gemm-activation declines what FusedGemm cannot express", "[fusion][fuse-gemm-activation]") {
  SECTION("Clip, which FusedGemm rejects") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) { return gb.clip(gb.gemm(x, 8), 0.0f, 6.0f); }));
  }
  SECTION("HardSwish, which FusedGemm rejects") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) { return gb.op("HardSwish", {gb.gemm(x, 8)}); }));
  }
  SECTION("a Gemm output read by two nodes") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* y = gb.gemm(x, 8);
      return gb.add(gb.relu(y), y);
    }));
  }
  SECTION("a Gemm output that is also a graph output") {
    require_declined(make([](ir::graph_builder& gb, ir::value* x) {
      ir::value* y = gb.gemm(x, 8);
      gb.output(y);
      return gb.relu(y);
    }));
  }
  SECTION("a float64 Gemm") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(gb.gemm(x, 8)); });
    for (ir::node* n : m.graph().nodes()) {
      for (ir::value* v : n->outputs()) v->set_type(ir::value_type{true, ir::data_type::float64, std::nullopt});
    }
    require_declined(std::move(m));
  }
  SECTION("a Gemm-6 broadcast attribute") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(gb.gemm(x, 8)); });
    for (ir::node* n : m.graph().nodes()) {
      if (n->is("Gemm")) n->set_attribute(ir::attribute::make_int("broadcast", 1));
    }
    require_declined(std::move(m));
  }
  SECTION("a model that imports another com.microsoft version") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.relu(gb.gemm(x, 8)); });
    m.opsets.push_back({"com.microsoft", 2});
    require_declined(std::move(m));
  }
}
