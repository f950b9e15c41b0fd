// The nine light CNN topologies match the ONNX reference evaluator's outputs for the input
// their README defines: x = arange(prod(shape)).reshape(shape) / prod(shape).

#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>

#include "inferopt/ir/serialize.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/paths.hpp"
#include "support/tensor_compare.hpp"

namespace fs = std::filesystem;
using namespace inferopt;

namespace {

runtime::tensor readme_input(const runtime::io_info& in) {
  runtime::shape_t shape;
  for (const ir::dim& d : in.shape) shape.push_back(d.is_static() ? d.value() : 1);
  const std::int64_t n = ir::tensor::element_count(shape);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) values[k] = static_cast<float>(static_cast<double>(k) / static_cast<double>(n));
  return runtime::tensor::from_values(shape, values);
}

}  // namespace

TEST_CASE("the light models match their expected outputs", "[runtime][light-models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  int matched = 0;
  for (const char* name : {"bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                           "squeezenet", "vgg19", "zfnet512"}) {
    CAPTURE(name);
    ir::model m = ir::load_model(*dir / ("light_" + std::string(name) + ".onnx"));
    runtime::session s(m);
    // IR 3 models list their weights as graph inputs too (with initializers): feed the
    // first input that has no default.
    auto data = std::find_if(s.inputs().begin(), s.inputs().end(), [](const runtime::io_info& i) { return !i.optional; });
    REQUIRE(data != s.inputs().end());
    runtime::tensor_map feeds{{data->name, readme_input(*data)}};
    auto out = s.run(feeds);
    runtime::tensor want = runtime::read_tensor_file((*dir / ("light_" + std::string(name) + "_output_0.pb")).string());
    std::string mismatch = test::compare_tensors(out.at(s.outputs().front().name), want, 1e-3, 1e-6);
    CHECK(mismatch.empty());
    if (mismatch.empty()) ++matched;
    else UNSCOPED_INFO(name << ": " << mismatch);
  }
  std::cout << "light models: " << matched << "/9 match\n";
}
