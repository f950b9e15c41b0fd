// fuse-conv-bn and fuse-conv-mul-add on the real topologies of the light models.
//
// Every weight of a light model is the same constant (0.02), which would hide a fold that
// mixes up channels. So the weights are first folded into initializers and each value is
// scaled by a random factor in [0.5, 1.5) (signs kept, so BN variances stay positive); the
// model after the fusion pipeline must then match that model at rtol 1e-3 / atol 1e-4, the
// float32 rounding of deep networks whose weights were re-rounded once.

#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "conv_fold_test_util.hpp"
#include "fusion_test_util.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/paths.hpp"

using namespace inferopt;

namespace {

/// Scales every float32 initializer value by its own random factor in [0.5, 1.5).
void perturb_weights(ir::graph& g, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> factor(0.5f, 1.5f);
  for (ir::value* v : g.initializers()) {
    const ir::tensor* t = v->initializer();
    if (t->dtype != ir::data_type::float32 || !t->has_data()) continue;
    std::vector<float> values = t->values<float>();
    for (float& x : values) x *= factor(rng);
    g.set_initializer(v, ir::tensor::from_values<float>(v->name(), t->dims, values));
  }
}

/// Whether every BatchNormalization reads the output of a Conv or ConvTranspose.
bool every_batch_norm_follows_a_conv(const ir::graph& g) {
  for (ir::node* n : g.nodes()) {
    if (!n->is("BatchNormalization")) continue;
    const ir::node* producer = n->input(0) ? n->input(0)->producer() : nullptr;
    if (!producer || !(producer->is("Conv") || producer->is("ConvTranspose"))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("conv weight folding removes the batch norms of the light models and keeps their outputs",
          "[fusion][fuse-conv-bn][fuse-conv-mul-add][light-models]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  const std::string name = GENERATE(as<std::string>{}, "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2",
                                    "resnet50", "shufflenet", "squeezenet", "vgg19", "zfnet512");
  CAPTURE(name);
  ir::model m = ir::load_model(*dir / ("light_" + name + ".onnx"));
  const std::vector<std::string> outputs = test::output_names(m.graph());
  test::run_builtin(m, "fold-constants{max-bytes=1073741824}");
  perturb_weights(m.graph(), 3);
  const ir::model before = test::copy_of(m);

  ir::graph& g = m.graph();
  const bool all_after_conv = every_batch_norm_follows_a_conv(g);
  const std::size_t bn_before = test::count_ops(g, "BatchNormalization");
  const std::size_t mul_before = test::count_ops(g, "Mul");
  const std::size_t add_before = test::count_ops(g, "Add");
  run_report r = test::run_builtin(m, "fold-constants{max-bytes=1073741824},fuse-conv-bn,fuse-conv-mul-add,dce,remove-unused");
  const std::size_t bn_after = test::count_ops(g, "BatchNormalization");
  INFO(name << ": BatchNormalization " << bn_before << " -> " << bn_after << ", Mul " << mul_before << " -> "
            << test::count_ops(g, "Mul") << ", Add " << add_before << " -> " << test::count_ops(g, "Add") << ", nodes "
            << r.nodes_before << " -> " << r.nodes_after);
  CHECK(test::output_names(g) == outputs);
  CHECK(ir::find_problems(g).empty());
  if (all_after_conv) {
    CHECK(bn_after == 0);
  } else {
    WARN(name << ": some BatchNormalization does not follow a conv; " << bn_before << " -> " << bn_after);
    CHECK(bn_after < bn_before);
  }
  test::require_same_outputs(before, m, 7, 1e-3, 1e-4);
  WARN(name << ": BatchNormalization " << bn_before << " -> " << bn_after << ", batch norms folded "
            << r.passes[1].rewrites << ", Mul/Add/Sub/Div folded " << r.passes[2].rewrites);
}
