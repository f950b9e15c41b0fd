// -O2 and -O3 on the nine light models and the default model: op counts before and after
// (printed: the table issue notes quote), the fusions the levels promise on ResNet-50, and
// the optimized light models still matching the expected outputs shipped with them.

#include <iostream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>

#include "inferopt/builtin.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"
#include "support/light_models.hpp"
#include "support/paths.hpp"
#include "support/tensor_compare.hpp"

namespace {

using namespace inferopt;

std::string histogram(const ir::model& m) {
  std::ostringstream out;
  for (const auto& [op, n] : ir::compute_statistics(m).ops) out << op << " " << n << ", ";
  std::string s = out.str();
  return s.empty() ? s : s.substr(0, s.size() - 2);
}

/// Conv outputs read by a Relu: what -O3 must leave none of.
std::size_t relus_after_conv(const ir::graph& g) {
  std::size_t n = 0;
  for (ir::node* x : g.nodes()) {
    if (x->is("Relu") && x->input(0) && x->input(0)->producer() && x->input(0)->producer()->is("Conv")) ++n;
  }
  return n;
}

ir::model optimized(const ir::model& m, int level) {
  ir::model copy = ir::parse_model(ir::serialize_model(m));
  pipeline p = level_pipeline(level, builtin_registry());
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  (void)manager.run(p, copy);
  return copy;
}

}  // namespace

TEST_CASE("levels O2 and O3 fuse the light models and keep their expected outputs", "[fusion][light-models][levels]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  for (const char* name : test::light_model_names) {
    CAPTURE(name);
    const ir::model m = ir::load_model(*dir / ("light_" + std::string(name) + ".onnx"));
    const runtime::tensor want =
        runtime::read_tensor_file((*dir / ("light_" + std::string(name) + "_output_0.pb")).string());
    std::cout << "light_" << name << ": " << m.graph().node_count() << " nodes (" << histogram(m) << ")\n";
    for (int level : {2, 3}) {
      CAPTURE(level);
      const ir::model o = optimized(m, level);
      std::cout << "  -O" << level << ": " << o.graph().node_count() << " nodes (" << histogram(o) << ")\n";
      runtime::session s(o);
      const runtime::tensor_map out = s.run(test::readme_feeds(s));
      const std::string mismatch = test::compare_tensors(out.at(s.outputs().front().name), want, 1e-3, 1e-6);
      CHECK(mismatch.empty());
      if (std::string(name) == "resnet50") {
        if (level == 2) CHECK(test::count_ops(o.graph(), "BatchNormalization") == 0);
        if (level == 3) CHECK(relus_after_conv(o.graph()) == 0);
      }
    }
  }
}

TEST_CASE("levels O2 and O3 fold every BatchNormalization of the default model and fuse its activations",
          "[fusion][levels]") {
  const ir::model m = ir::make_default_model();
  std::cout << "default model: " << m.graph().node_count() << " nodes (" << histogram(m) << ")\n";
  for (int level : {2, 3}) {
    const ir::model o = optimized(m, level);
    std::cout << "  -O" << level << ": " << o.graph().node_count() << " nodes (" << histogram(o) << ")\n";
    CHECK(test::count_ops(o.graph(), "BatchNormalization") == 0);
    if (level == 3) CHECK(relus_after_conv(o.graph()) == 0);
  }
}
