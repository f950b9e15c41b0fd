// quantize_model: calibration, merged shards, QDQ and the accuracy fallback in one call.
//
// Metric: top-1 agreement (or, for outputs without classes, mean output cosine) with the
// float model on the validation batches, as the result reports it; the budget cases check the
// fallback's bookkeeping against that number rather than expecting exact logits.

#include "inferopt/quant/quantize_model.hpp"

#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/quant/calibrators.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "small_cnn.hpp"

using namespace inferopt;

namespace {

using test::small_cnn;

std::vector<runtime::tensor_map> random_batches(const ir::model& m, std::uint64_t first_seed, std::size_t count) {
  const runtime::session s(m, runtime::session_options{.threads = 1});
  std::vector<runtime::tensor_map> batches;
  for (std::size_t k = 0; k < count; ++k) batches.push_back(runtime::random_inputs(s, first_seed + k));
  return batches;
}

bool same_ranges(const quant::range_table& a, const quant::range_table& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, r] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.min != r.min || it->second.max != r.max) return false;
  }
  return true;
}

std::size_t count_ops(const ir::model& m, std::string_view op) {
  std::size_t n = 0;
  for (const ir::node* node : m.graph().nodes()) n += node->is(op) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("quantize_model calibrates, inserts QDQ and leaves a model that verifies and runs", "[quant][quantize-model]") {
  ir::model m = small_cnn();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 4);
  quant::quantize_options options;
  options.calibration_batches = batches;
  options.fallback.min_top1_agreement = 0.0;  // keep everything quantized
  const quant::quantize_result r = quant::quantize_model(m, options);

  CHECK(r.qdq.nodes_quantized == 4);  // conv1, conv2, the pool and fc
  CHECK(r.qdq.weights_quantized == 3);
  CHECK(r.fallback_nodes.empty());
  CHECK(r.budget_met);
  CHECK_FALSE(r.ranges.empty());
  CHECK(r.state.find("x") != nullptr);
  CHECK(count_ops(m, "QuantizeLinear") == static_cast<std::size_t>(r.qdq.activations_quantized));
  CHECK(count_ops(m, "DequantizeLinear") > 0);
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK_NOTHROW(ir::check_with_onnx(m));
  // The error is measured on the calibration batches (fewer than the default 8): 4 x 64 images.
  CHECK(r.error.samples == 256);
  CHECK(r.error.top1_agreement > 0.5);
  runtime::session s(m, runtime::session_options{.threads = 1});
  CHECK(s.run(batches[0]).at(m.graph().outputs()[0]->name()).element_count() == 640);
}

TEST_CASE("quantize_model hands the merged state to on_calibrated and computes ranges from it", "[quant][quantize-model]") {
  ir::model m = small_cnn();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 2);
  const std::vector<runtime::tensor_map> shard_batches = random_batches(m, 10, 2);
  const std::vector<quant::calibration_state> shards{quant::calibrate(m, shard_batches).state};
  quant::quantize_options options;
  options.calibration_batches = batches;
  options.merge_states = shards;
  int calls = 0;
  quant::calibration_state seen;
  options.on_calibrated = [&](const quant::calibration_state& s) {
    ++calls;
    seen = s;
  };
  const quant::quantize_result r = quant::quantize_model(m, options);

  CHECK(calls == 1);
  CHECK(seen == r.state);
  quant::calibration_state expected = quant::calibrate(small_cnn(), batches).state;
  expected.merge(shards[0]);
  CHECK(r.state == expected);
  CHECK(same_ranges(r.ranges, quant::compute_ranges(expected, options.calibration.calibrator)));
}

TEST_CASE("quantize_model validates on one random batch when only merged states are given", "[quant][quantize-model]") {
  ir::model m = small_cnn();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 2);
  const std::vector<quant::calibration_state> shards{quant::calibrate(m, batches).state};
  quant::quantize_options options;
  options.merge_states = shards;
  options.fallback.min_top1_agreement = 0.0;
  const quant::quantize_result r = quant::quantize_model(m, options);
  CHECK(r.qdq.nodes_quantized == 4);
  CHECK(r.error.samples == 64);  // one batch of 64 images
}

TEST_CASE("quantize_model returns nodes to float, worst first, while the budget is not met", "[quant][quantize-model]") {
  ir::model m = small_cnn();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 2);
  quant::quantize_options options;
  options.calibration_batches = batches;
  options.fallback.min_top1_agreement = 1.01;  // out of reach: every quantized node goes back
  const quant::quantize_result r = quant::quantize_model(m, options);

  CHECK_FALSE(r.budget_met);
  // Every node that read a DequantizeLinear went back, one at a time: the four quantized
  // ones and the Flatten behind the pool's Q/DQ pair.
  CHECK(r.fallback_nodes.size() == 5);
  CHECK(std::set<std::string>(r.fallback_nodes.begin(), r.fallback_nodes.end()).size() == r.fallback_nodes.size());
  CHECK(r.qdq.nodes_quantized == 0);
  CHECK(count_ops(m, "QuantizeLinear") == 0);
  CHECK(ir::find_problems(m.graph()).empty());
}

TEST_CASE("quantize_model leaves the model as it was when it throws", "[quant][quantize-model]") {
  SECTION("no calibration batches and no states") {
    ir::model m = small_cnn();
    const std::string before = ir::serialize_model(m);
    REQUIRE_THROWS_AS(quant::quantize_model(m, {}), error);
    CHECK(ir::serialize_model(m) == before);
  }
  SECTION("an opset without QuantizeLinear that the converter cannot raise") {
    ir::model m = small_cnn(9);
    // A Dropout mask someone reads changes type at opset 10: the converter refuses it.
    ir::node* d = m.graph().add_node(ir::node_spec{"Dropout", {m.graph().outputs()[0]}, {"y", "mask"}, {}, "dropout", {}});
    m.graph().set_output(0, d->output(0));
    m.graph().add_output(d->output(1));
    const std::string before = ir::serialize_model(m);
    const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 1);
    quant::quantize_options options;
    options.calibration_batches = batches;
    try {
      (void)quant::quantize_model(m, options);
      FAIL("quantize_model accepted an opset-9 model it cannot convert");
    } catch (const error& e) {
      CHECK(e.code() == errc::unsupported);
      CHECK_THAT(e.what(), Catch::Contains("QuantizeLinear needs opset 10 or later") && Catch::Contains("mask"));
    }
    CHECK(ir::serialize_model(m) == before);
  }
}

TEST_CASE("quantize_model converts a model below opset 10 first, and says so", "[quant][quantize-model]") {
  const bool per_channel = GENERATE(true, false);
  CAPTURE(per_channel);
  ir::model m = small_cnn(9);
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 2);
  quant::quantize_options options;
  options.calibration_batches = batches;
  options.fallback.min_top1_agreement = 0.0;
  options.qdq.weights = per_channel ? quant::weight_granularity::per_channel : quant::weight_granularity::per_tensor;
  const quant::quantize_result r = quant::quantize_model(m, options);
  const std::int64_t opset = per_channel ? 13 : 11;
  CHECK(r.opset_conversion == "converted opset 9 -> " + std::to_string(opset) + " for QuantizeLinear");
  CHECK(m.opset("") == opset);
  CHECK(r.qdq.opset == opset);
  CHECK(r.qdq.nodes_quantized == 4);
  CHECK_NOTHROW(ir::check_with_onnx(m));
}

TEST_CASE("quantize_model leaves an opset that QDQ needs as it is", "[quant][quantize-model]") {
  ir::model m = small_cnn(13);
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 1);
  quant::quantize_options options;
  options.calibration_batches = batches;
  const quant::quantize_result r = quant::quantize_model(m, options);
  CHECK(r.opset_conversion.empty());
  CHECK(m.opset("") == 13);
}

TEST_CASE("the fallback judges class scores by top-1 and other outputs by their cosine", "[quant][quantize-model]") {
  CHECK(quant::default_fallback_metric(small_cnn()) == quant::fallback_metric::top1);  // Gemm logits [64, 10]

  // An embedding head: the same CNN's features through LayerNormalization, and the feature
  // map itself (rank 4).
  for (const bool normalized : {true, false}) {
    ir::model m = ir::make_model("embedding", 17);
    ir::graph_builder b(m.graph(), 3);
    ir::value* x = b.input("x", ir::data_type::float32, {4, 3, 8, 8});
    ir::value* h = b.relu(b.conv(x, 8, {}, "conv"));
    if (normalized) {
      h = b.flatten(b.global_average_pool(h));
      h = b.op("LayerNormalization", {h, b.constant("gamma", {8}, std::vector<float>(8, 1.0f)),
                                      b.constant("beta", {8}, std::vector<float>(8, 0.0f))}, {}, "norm");
    }
    b.output(h);
    CAPTURE(normalized);
    CHECK(quant::default_fallback_metric(m) == quant::fallback_metric::cosine);
  }
}

TEST_CASE("the cosine budget drives the fallback like the top-1 one", "[quant][quantize-model]") {
  ir::model m = small_cnn();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1, 2);
  quant::quantize_options options;
  options.calibration_batches = batches;
  options.fallback.metric = quant::fallback_metric::cosine;
  options.fallback.min_top1_agreement = 1.01;  // ignored under the cosine metric

  SECTION("a budget the quantized model meets keeps it quantized") {
    options.fallback.min_output_cosine = 0.9;
    const quant::quantize_result r = quant::quantize_model(m, options);
    CHECK(r.budget_met);
    CHECK(r.fallback_nodes.empty());
    CHECK(r.error.output_cosine >= 0.9);
    CHECK(r.error.output_cosine <= 1.0 + 1e-9);
    CHECK(r.error.cosine_samples == 2 * 64);  // one per image of each batch
  }
  SECTION("a budget out of reach sends every quantized node back") {
    options.fallback.min_output_cosine = 1.01;
    ir::model copy = small_cnn();
    const quant::quantize_result r = quant::quantize_model(copy, options);
    CHECK_FALSE(r.budget_met);
    CHECK(r.fallback_nodes.size() == 5);
    CHECK(r.error.output_cosine == Approx(1.0));  // all float again: the outputs agree
  }
}
