// prune_model on the shape of a TorchScript export: convs that share one bias, most of them
// reading it through an Identity.

#include "inferopt/prune/prune.hpp"

#include <catch2/catch.hpp>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"

using namespace inferopt;

namespace {

/// x -> Conv(b) -> Relu -> Conv(Identity(b)) -> Relu -> Conv(Identity(b)) -> Relu -> pool ->
/// Flatten -> Gemm: one shared bias `b`, as torch.onnx.export writes equal biases.
ir::model torchscript_shaped_model() {
  ir::model m = ir::make_model("exported");
  ir::graph_builder b(m.graph(), 3);
  ir::value* x = b.input("x", ir::data_type::float32, {1, 3, 8, 8});
  ir::value* bias = b.random_constant("b", {8}, 0.5f);
  ir::value* h = x;
  for (std::int64_t in_channels : {3, 8, 8}) {
    ir::value* w = b.random_constant("w", {8, in_channels, 3, 3}, 0.3f);
    ir::value* read = in_channels == 3 ? bias : b.identity(bias);
    std::vector<ir::attribute> attrs;
    attrs.push_back(ir::attribute::make_ints("pads", {1, 1, 1, 1}));
    ir::value* y = b.op("Conv", {h, w, read}, std::move(attrs));
    y->set_type(ir::value_type{true, ir::data_type::float32, ir::shape{1, 8, 8, 8}});
    h = b.relu(y);
  }
  b.output(b.gemm(b.flatten(b.global_average_pool(h)), 10));
  return m;
}

}  // namespace

TEST_CASE("prune_model prunes convs that share a bias through Identity nodes", "[prune][prune-model]") {
  ir::model m = torchscript_shaped_model();
  REQUIRE(test::count_ops(m.graph(), "Identity") == 2);
  prune::prune_options o;
  o.selection.ratio = 0.5;
  o.selection.round_to = 1;
  const prune::prune_summary s = prune::prune_model(m, o);

  CHECK(test::count_ops(m.graph(), "Identity") == 0);
  CHECK(s.prunable_groups == 2);  // the first conv and the classifier are ignored by default
  CHECK(s.removed_units == 2 * 4);
  CHECK(s.macs_after < s.macs_before);
  REQUIRE(ir::find_problems(m.graph()).empty());
  std::vector<std::int64_t> bias_sizes;
  for (const ir::node* n : m.graph().nodes()) {
    if (n->is("Conv")) bias_sizes.push_back(n->input(2)->initializer()->dims[0]);
  }
  CHECK(bias_sizes == std::vector<std::int64_t>{8, 4, 4});  // the first conv keeps the original
  runtime::session pruned(m, {.threads = 1});
  CHECK(pruned.run(runtime::random_inputs(pruned, 1)).begin()->second.shape() == std::vector<std::int64_t>{1, 10});
}
