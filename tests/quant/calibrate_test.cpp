// calibrate(): statistics collected through the executor's observer, in parallel sessions,
// must equal what a session computes when the tensor is exposed as a graph output.

#include "inferopt/quant/calibrate.hpp"

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/runtime/inputs.hpp"

using namespace inferopt;

namespace {

std::vector<runtime::tensor_map> random_batches(const ir::model& m, std::size_t count) {
  runtime::session s(m);
  std::vector<runtime::tensor_map> batches;
  for (std::size_t b = 0; b < count; ++b) batches.push_back(runtime::random_inputs(s, 100 + b));
  return batches;
}

/// Intermediate values computed by a node and not already graph outputs.
std::vector<std::string> some_intermediates(const ir::model& m, std::size_t count) {
  std::vector<std::string> names;
  for (ir::node* n : m.graph().nodes()) {
    for (ir::value* v : n->outputs()) {
      if (v && !v->name().empty() && names.size() < count) names.push_back(v->name());
    }
  }
  return names;
}

}  // namespace

TEST_CASE("observer-collected min and max equal those of the tensor exposed as a graph output",
          "[quant][calibrate]") {
  const ir::model m = ir::make_default_model();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 4);
  quant::calibrate_options options;
  options.threads = 2;
  const quant::calibration_result result = quant::calibrate(m, batches, options);

  // Graph inputs are collected from the feed.
  for (const auto& [name, _] : batches[0]) CHECK(result.state.find(name) != nullptr);

  for (const std::string& name : some_intermediates(m, 6)) {
    CAPTURE(name);
    ir::model exposed = ir::make_default_model();  // same seed, same weights
    exposed.graph().add_output(exposed.graph().find_value(name));
    // As the observing session does, run the graph as given: a rewritten one (blocked conv
    // layout) sums in another order.
    runtime::session session(exposed, runtime::session_options{.rewrite_graph = false});
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const runtime::tensor_map& feed : batches) {
      for (float v : session.run(feed).at(name).to_float()) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
    }
    const quant::tensor_statistics* stats = result.state.find(name);
    REQUIRE(stats != nullptr);
    CHECK(stats->min() == lo);
    CHECK(stats->max() == hi);
    CHECK(stats->batches() == batches.size());
    CHECK(result.ranges.at(name).min == lo);  // min-max by default
    CHECK(result.ranges.at(name).max == hi);
  }
}

TEST_CASE("calibration on several threads equals calibration on one", "[quant][calibrate]") {
  const ir::model m = ir::make_default_model();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 5);
  quant::calibrate_options options;
  options.threads = 1;
  options.calibrator.method = quant::calibration_method::entropy;
  const quant::calibration_result one = quant::calibrate(m, batches, options);
  options.threads = 3;
  std::vector<std::size_t> progress;
  options.on_progress = [&](std::size_t done, std::size_t total) {
    CHECK(total == batches.size());
    progress.push_back(done);
  };
  const quant::calibration_result three = quant::calibrate(m, batches, options);

  CHECK(progress == std::vector<std::size_t>{1, 2, 3, 4, 5});
  REQUIRE(one.state.tensors().size() == three.state.tensors().size());
  for (const auto& [name, stats] : one.state.tensors()) {
    CAPTURE(name);
    const quant::tensor_statistics& other = *three.state.find(name);
    CHECK(std::ranges::equal(stats.abs_histogram(), other.abs_histogram()));
    CHECK(std::ranges::equal(stats.histogram(), other.histogram()));
    CHECK(stats.min() == other.min());
    CHECK(stats.max() == other.max());
    CHECK(one.ranges.at(name).max == three.ranges.at(name).max);
    CHECK(one.ranges.at(name).max <= stats.abs_max());
  }
  CHECK(one.state.serialize() == three.state.serialize());
}

TEST_CASE("the filter chooses which tensors calibration collects", "[quant][calibrate]") {
  const ir::model m = ir::make_default_model();
  const std::vector<runtime::tensor_map> batches = random_batches(m, 1);
  const std::string wanted = some_intermediates(m, 1).at(0);
  quant::calibrate_options options;
  options.filter = [&](std::string_view name, ir::data_type) { return name == wanted; };
  const quant::calibration_result result = quant::calibrate(m, batches, options);
  REQUIRE(result.state.tensors().size() == 1);
  CHECK(result.state.find(wanted) != nullptr);
  CHECK(result.ranges.size() == 1);
}

TEST_CASE("calibration refuses an empty batch list and reports a failing batch", "[quant][calibrate]") {
  const ir::model m = ir::make_default_model();
  CHECK_THROWS_AS(quant::calibrate(m, std::span<const runtime::tensor_map>{}), error);
  std::vector<runtime::tensor_map> batches = random_batches(m, 3);
  batches[1].clear();  // a missing input
  quant::calibrate_options options;
  options.threads = 2;
  CHECK_THROWS_AS(quant::calibrate(m, batches, options), error);
}
