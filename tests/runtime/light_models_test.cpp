// The nine light CNN topologies match the ONNX reference evaluator's outputs for the input
// their README defines: x = arange(prod(shape)).reshape(shape) / prod(shape).

#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>

#include "inferopt/ir/serialize.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"
#include "support/tensor_compare.hpp"

namespace fs = std::filesystem;
using namespace inferopt;

TEST_CASE("the light models match their expected outputs", "[runtime][light-models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  int matched = 0;
  for (const char* name : test::light_model_names) {
    CAPTURE(name);
    ir::model m = ir::load_model(*dir / ("light_" + std::string(name) + ".onnx"));
    runtime::session s(m);
    runtime::tensor want = runtime::read_tensor_file((*dir / ("light_" + std::string(name) + "_output_0.pb")).string());
    // The first run is traced for the memory plan; the second places intermediates by it.
    std::string mismatch;
    for (int run = 0; run < 2 && mismatch.empty(); ++run) {
      auto out = s.run(test::readme_feeds(s));
      mismatch = test::compare_tensors(out.at(s.outputs().front().name), want, 1e-3, 1e-6);
      if (!mismatch.empty()) mismatch = "run " + std::to_string(run) + ": " + mismatch;
    }
    CHECK(s.memory_plan().active);
    CHECK(mismatch.empty());
    if (mismatch.empty()) ++matched;
    else UNSCOPED_INFO(name << ": " << mismatch);
  }
  std::cout << "light models: " << matched << "/9 match\n";
}
