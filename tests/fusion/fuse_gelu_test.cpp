// fuse-gelu: the erf and tanh forms of GELU written out become one Gelu node.
//
// Numbers: the executor runs the model before and after on the same random inputs
// (require_same_outputs, rtol 1e-4). Its Gelu computes x Phi(x) through erfc and the tanh
// form as x / (1 + e^(-2u)), the chains compute 0.5 x (1 + erf) and 0.5 x (1 + tanh): the
// same functions, equal to float rounding on normal inputs.

#include "inferopt/fusion/fuse_gelu.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <numbers>
#include <string>

#include "fusion_test_util.hpp"
#include "inferopt/ir/graph_builder.hpp"

using namespace inferopt;

namespace {

using body = std::function<ir::value*(ir::graph_builder&, ir::value* x)>;

/// A model `x [2,8] -> body -> y` at `opset`.
ir::model make(const body& f, std::int64_t opset, ir::data_type type = ir::data_type::float32) {
  ir::model m = ir::make_model("gelu", opset);
  ir::graph_builder gb(m.graph(), 3);
  ir::value* x = gb.input("x", type, ir::shape{ir::dim{2}, ir::dim{8}});
  gb.output(f(gb, x));
  return m;
}

ir::value* number(ir::graph_builder& gb, double v) {
  static int count = 0;
  return gb.constant("c" + std::to_string(count++), {}, {static_cast<float>(v)});
}

/// The three associations of 0.5 * x * a.
enum class tail { x_times_a_first, a_halved_first, x_halved_first };

ir::value* half_x_times(ir::graph_builder& gb, ir::value* x, ir::value* a, tail t) {
  switch (t) {
    case tail::x_times_a_first: return gb.mul(gb.mul(x, a), number(gb, 0.5));
    case tail::a_halved_first: return gb.mul(x, gb.mul(a, number(gb, 0.5)));
    case tail::x_halved_first: return gb.mul(gb.mul(x, number(gb, 0.5)), a);
  }
  return nullptr;
}

/// The erf form, scaled by Div(sqrt 2) (torch) or Mul(1/sqrt 2).
ir::value* erf_gelu(ir::graph_builder& gb, ir::value* x, tail t, bool divide = true, double half = 0.5) {
  ir::value* scaled = divide ? gb.op("Div", {x, number(gb, std::numbers::sqrt2)})
                             : gb.mul(number(gb, 1 / std::numbers::sqrt2), x);
  ir::value* a = gb.add(gb.op("Erf", {scaled}), number(gb, 1.0));
  if (half != 0.5) return gb.mul(gb.mul(x, a), number(gb, half));
  return half_x_times(gb, x, a, t);
}

/// The tanh form, with x^3 as Pow(x, 3) or x * (x * x).
ir::value* tanh_gelu(ir::graph_builder& gb, ir::value* x, bool pow) {
  ir::value* cube = pow ? gb.op("Pow", {x, number(gb, 3.0)}) : gb.mul(x, gb.mul(x, x));
  ir::value* inner = gb.add(x, gb.mul(number(gb, 0.044715), cube));
  ir::value* u = gb.mul(inner, number(gb, std::numbers::sqrt2 * std::numbers::inv_sqrtpi));
  ir::value* a = gb.add(number(gb, 1.0), gb.tanh(u));
  return half_x_times(gb, x, a, tail::x_times_a_first);
}

}  // namespace

TEST_CASE("fuse-gelu fuses the erf form in each association to ai.onnx Gelu at opset 20", "[fusion][fuse-gelu]") {
  const tail t = GENERATE(tail::x_times_a_first, tail::a_halved_first, tail::x_halved_first);
  const bool divide = GENERATE(true, false);
  ir::model m = make([&](ir::graph_builder& gb, ir::value* x) { return erf_gelu(gb, x, t, divide); }, 20);
  const pass_record r = test::pass_checker("fuse-gelu").run_and_compare(m);
  CHECK(r.rewrites == 1);
  const ir::node& n = test::only_node(m);
  CHECK(n.is("Gelu"));
  CHECK_FALSE(n.find_attribute("approximate"));
  CHECK(n.input(0)->name() == "x");
}

TEST_CASE("fuse-gelu fuses the tanh form with Pow or a product of three", "[fusion][fuse-gelu]") {
  const bool pow = GENERATE(true, false);
  ir::model m = make([&](ir::graph_builder& gb, ir::value* x) { return tanh_gelu(gb, x, pow); }, 20);
  test::pass_checker("fuse-gelu").run_and_compare(m);
  const ir::node& n = test::only_node(m);
  CHECK(n.is("Gelu"));
  CHECK(n.attr_string("approximate", "") == "tanh");
}

TEST_CASE("below opset 20 fuse-gelu writes com.microsoft Gelu and FastGelu only when allowed", "[fusion][fuse-gelu]") {
  const body erf = [](ir::graph_builder& gb, ir::value* x) { return erf_gelu(gb, x, tail::x_times_a_first); };
  const body approx = [](ir::graph_builder& gb, ir::value* x) { return tanh_gelu(gb, x, true); };
  SECTION("the default declines at opset 17") {
    ir::model m = make(erf, 17);
    const pass_record r = test::pass_checker("fuse-gelu").require_declined(m);
    CHECK(r.counters.at("declined-opset") == 1);
  }
  SECTION("domain=com.microsoft gives Gelu for erf and FastGelu for tanh") {
    for (const auto& [f, op] : {std::pair{erf, "Gelu"}, std::pair{approx, "FastGelu"}}) {
      ir::model m = make(f, 17);
      test::pass_checker("fuse-gelu{domain=com.microsoft}").run_and_compare(m);
      const ir::node& n = test::only_node(m);
      CHECK(n.op_type() == op);
      CHECK(n.domain() == "com.microsoft");
      CHECK(m.opset("com.microsoft") == std::optional<std::int64_t>(1));
    }
  }
}

TEST_CASE("fuse-gelu leaves chains that are not GELU alone", "[fusion][fuse-gelu]") {
  const test::pass_checker checker("fuse-gelu");
  SECTION("a constant off the formula") {
    ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return erf_gelu(gb, x, tail::x_times_a_first, true, 0.6); }, 20);
    checker.require_declined(m);
  }
  SECTION("an intermediate value with a second reader") {
    ir::model m = make(
        [](ir::graph_builder& gb, ir::value* x) {
          ir::value* e = gb.op("Erf", {gb.op("Div", {x, number(gb, std::numbers::sqrt2)})});
          gb.output(e);  // the Erf's result is read outside the chain
          return half_x_times(gb, x, gb.add(e, number(gb, 1.0)), tail::x_times_a_first);
        },
        20);
    checker.require_declined(m);
  }
  SECTION("a product with another value than x") {
    ir::model m = make(
        [](ir::graph_builder& gb, ir::value* x) {
          ir::value* scaled = gb.op("Div", {x, number(gb, std::numbers::sqrt2)});
          ir::value* a = gb.add(gb.op("Erf", {scaled}), number(gb, 1.0));
          return gb.mul(gb.mul(gb.relu(x), a), number(gb, 0.5));
        },
        20);
    checker.require_declined(m);
  }
}

TEST_CASE("fuse-gelu fuses x * Sigmoid(alpha x) into com.microsoft QuickGelu only when allowed", "[fusion][fuse-gelu]") {
  const bool alpha_first = GENERATE(false, true);
  const bool sigmoid_first = GENERATE(false, true);
  const body quick = [&](ir::graph_builder& gb, ir::value* x) {
    ir::value* scaled = alpha_first ? gb.mul(number(gb, 1.702), x) : gb.mul(x, number(gb, 1.702));
    ir::value* s = gb.sigmoid(scaled);
    return sigmoid_first ? gb.mul(s, x) : gb.mul(x, s);
  };
  ir::model plain = make(quick, 17);
  CHECK_FALSE(test::pass_checker("fuse-gelu").run(plain).changed);
  ir::model m = make(quick, 17);
  test::pass_checker("fuse-gelu{domain=com.microsoft}").run_and_compare(m);
  const ir::node& n = test::only_node(m);
  CHECK(n.op_type() == "QuickGelu");
  CHECK(n.domain() == "com.microsoft");
  CHECK(n.attr_float("alpha", 0.0f) == Approx(1.702f));
}

TEST_CASE("fuse-gelu leaves SiLU, x * Sigmoid(x), as it is", "[fusion][fuse-gelu]") {
  ir::model m = make([](ir::graph_builder& gb, ir::value* x) { return gb.mul(x, gb.sigmoid(x)); }, 17);
  test::pass_checker("fuse-gelu{domain=com.microsoft}").require_declined(m);
}
