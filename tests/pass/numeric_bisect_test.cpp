// numeric_bisect: names the first pass run that moves an output beyond tolerance.

#include <catch2/catch.hpp>

#include "inferopt/ir/sample_models.hpp"
#include "inferopt/pass/numeric_bisect.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "pass_test_util.hpp"

namespace {

using namespace inferopt;

/// Scales the first float initializer by `factor` (1 + 1e-7 stays within rounding; 1.5 does
/// not): a stand-in for a fusion with a numeric bug.
class scale_first_weight final : public pass {
 public:
  explicit scale_first_weight(double factor) : factor_(factor) {}
  [[nodiscard]] std::string_view name() const noexcept override { return factor_ > 1.01 ? "test-break" : "test-nudge"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "scales one weight"; }
  bool run(ir::graph& g, pass_context& ctx) override {
    for (ir::value* v : g.initializers()) {
      if (v->initializer()->dtype != ir::data_type::float32 || v->initializer()->dims.size() < 2) continue;
      std::vector<float> w = v->initializer()->values<float>();
      for (float& x : w) x = static_cast<float>(x * factor_);
      g.set_initializer(v, ir::tensor::from_values<float>(v->name(), v->initializer()->dims, w));
      ctx.rewrote();
      return true;
    }
    return false;
  }

 private:
  double factor_;
};

runtime::tensor_map inputs_for(const ir::model& m) {
  runtime::session s(m, runtime::session_options{.threads = 1});
  return runtime::random_inputs(s, 3);
}

pipeline steps_of(std::vector<std::unique_ptr<pass>> passes) {
  pipeline p;
  for (auto& x : passes) {
    pipeline_step step;
    step.single = std::move(x);
    p.steps.push_back(std::move(step));
  }
  return p;
}

}  // namespace

TEST_CASE("numeric bisect names the first pass that changes outputs", "[pass][numeric-bisect]") {
  ir::model m = ir::make_default_model();
  auto bisect = std::make_unique<numeric_bisect>(m, inputs_for(m), numeric_tolerance{}, 1);
  numeric_bisect* b = bisect.get();
  pass_manager manager;
  manager.add_instrumentation(std::move(bisect));
  std::vector<std::unique_ptr<pass>> passes;
  passes.push_back(std::make_unique<scale_first_weight>(1.0 + 1e-7));
  passes.push_back(std::make_unique<scale_first_weight>(1.5));
  passes.push_back(std::make_unique<scale_first_weight>(1.0 + 1e-7));
  pipeline p = steps_of(std::move(passes));
  (void)manager.run(p, m);
  REQUIRE(b->first_divergence());
  CHECK(b->first_divergence()->pass == "test-break");
  CHECK(b->first_divergence()->run == 1);
  CHECK(b->first_divergence()->checks == 2);
  CHECK_FALSE(b->first_divergence()->comparison.within());
  CHECK(b->checks() == 2);  // checking stops at the first divergence
}

TEST_CASE("numeric bisect reports nothing when every pass keeps the outputs", "[pass][numeric-bisect]") {
  ir::model m = ir::make_default_model();
  const ir::model reference = ir::parse_model(ir::serialize_model(m));
  auto bisect = std::make_unique<numeric_bisect>(m, inputs_for(m), numeric_tolerance{}, 1);
  numeric_bisect* b = bisect.get();
  pass_manager manager;
  manager.add_instrumentation(std::move(bisect));
  pipeline p = test::cleanup_fixpoint(test::cleanup_registry());
  (void)manager.run(p, m);
  CHECK_FALSE(b->first_divergence());
  CHECK(b->checks() >= 1);
  CHECK(compare_models(reference, m, inputs_for(reference), numeric_tolerance{}, 1).within());
}
