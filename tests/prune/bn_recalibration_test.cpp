// BatchNormalization recalibration: running statistics re-estimated from batches, the way
// PyTorch does in train mode with momentum=None.
//
// Expected statistics are computed here in double from tensors the executor produced (or
// from the inputs themselves). The library measures them in float32 (ReduceMean accumulates
// in double and rounds once), so they agree to about 1e-6 relative; the checks use 1e-5.

#include "inferopt/prune/bn_recalibration.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "digits_accuracy.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/random_values.hpp"

using namespace inferopt;

namespace {

constexpr double tolerance = 1e-5;

ir::node* find_node(const ir::graph& g, const std::string& name) {
  for (ir::node* n : g.nodes()) {
    if (n->name() == name) return n;
  }
  FAIL("no node named " << name);
  return nullptr;
}

std::vector<double> doubles_of(const ir::value* v) {
  const std::vector<float> f = v->initializer()->values<float>();
  return {f.begin(), f.end()};
}
std::vector<double> running_mean(const ir::graph& g, const std::string& bn) {
  return doubles_of(find_node(g, bn)->input(3));
}
std::vector<double> running_var(const ir::graph& g, const std::string& bn) {
  return doubles_of(find_node(g, bn)->input(4));
}

/// Replaces a float32 initializer's values with `value` everywhere.
void fill(ir::graph& g, ir::value* v, float value) {
  const auto count = static_cast<std::size_t>(v->initializer()->element_count());
  g.set_initializer(v, ir::tensor::from_values<float>("", v->initializer()->dims, std::vector<float>(count, value)));
}

/// Running statistics far from anything the data gives, so recalibration visibly changes them.
void make_statistics_wrong(ir::graph& g, const std::string& bn) {
  fill(g, find_node(g, bn)->input(3), 5.0f);
  fill(g, find_node(g, bn)->input(4), 100.0f);
}

/// A float NCHW tensor in double, with its shape.
struct nchw {
  std::vector<std::int64_t> shape;
  std::vector<double> values;
  [[nodiscard]] std::int64_t channels() const { return shape[1]; }
  [[nodiscard]] std::int64_t spatial() const { return shape[2] * shape[3]; }
  [[nodiscard]] double& at(std::int64_t n, std::int64_t c, std::int64_t s) {
    return values[static_cast<std::size_t>((n * channels() + c) * spatial() + s)];
  }
};

nchw nchw_of(const runtime::tensor& t) {
  const auto f = t.values<float>();
  return {t.shape(), {f.begin(), f.end()}};
}

runtime::tensor random_input(std::vector<std::int64_t> shape, std::uint32_t seed, float offset = 0.0f) {
  std::vector<float> v = test::random_values(static_cast<std::size_t>(ir::tensor::element_count(shape)), seed);
  for (float& x : v) x += offset;
  return runtime::tensor::from_values(std::move(shape), v);
}

/// Per-channel mean and biased variance, in double.
struct channel_statistics {
  std::vector<double> mean, var;
  std::int64_t per_channel = 0;
};

channel_statistics statistics_of(nchw x) {
  channel_statistics s;
  s.per_channel = x.shape[0] * x.spatial();
  for (std::int64_t c = 0; c < x.channels(); ++c) {
    double sum = 0.0, squares = 0.0;
    for (std::int64_t n = 0; n < x.shape[0]; ++n) {
      for (std::int64_t k = 0; k < x.spatial(); ++k) sum += x.at(n, c, k);
    }
    const double mean = sum / static_cast<double>(s.per_channel);
    for (std::int64_t n = 0; n < x.shape[0]; ++n) {
      for (std::int64_t k = 0; k < x.spatial(); ++k) squares += (x.at(n, c, k) - mean) * (x.at(n, c, k) - mean);
    }
    s.mean.push_back(mean);
    s.var.push_back(squares / static_cast<double>(s.per_channel));
  }
  return s;
}

std::vector<double> unbiased(const channel_statistics& s) {
  std::vector<double> v = s.var;
  const auto n = static_cast<double>(s.per_channel);
  for (double& x : v) x *= n / (n - 1.0);
  return v;
}

void require_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t c = 0; c < actual.size(); ++c) {
    CAPTURE(c, actual[c], expected[c]);
    CHECK(actual[c] == Approx(expected[c]).epsilon(tolerance));
  }
}

/// The tensor named `name` while `m` runs on `inputs`.
runtime::tensor observe(const ir::model& m, const runtime::tensor_map& inputs, const std::string& name) {
  runtime::tensor seen;
  runtime::session_options options;
  options.threads = 1;
  options.on_value = [&](std::string_view value_name, const runtime::tensor& value) {
    if (value_name == name) seen = value.clone();
  };
  runtime::session session(m, options);
  (void)session.run(inputs);
  REQUIRE_FALSE(seen.empty());
  return seen;
}

/// x -> BatchNormalization "bn" -> output.
ir::model single_batch_norm(std::vector<std::int64_t> shape, std::int64_t opset = 17) {
  ir::model m = ir::make_model("single_bn", opset);
  ir::graph_builder b(m.graph(), 1);
  b.output(b.batch_norm(b.input("x", ir::data_type::float32, ir::shape(shape.begin(), shape.end())), 1e-5f, "bn"));
  return m;
}

/// x -> BN "bn_a" -> BN "bn_b" -> BN "bn_c" -> output, on [4, 3, 5, 5].
ir::model three_batch_norms() {
  ir::model m = ir::make_model("three_bns");
  ir::graph_builder b(m.graph(), 2);
  ir::value* x = b.input("x", ir::data_type::float32, {4, 3, 5, 5});
  b.output(b.batch_norm(b.batch_norm(b.batch_norm(x, 1e-5f, "bn_a"), 1e-5f, "bn_b"), 1e-5f, "bn_c"));
  return m;
}

std::string bytes_of(const ir::value* v) { return *v->initializer()->bytes; }

}  // namespace

TEST_CASE("recalibration sets the statistics of each batch norm's input when earlier ones use batch statistics",
          "[prune][bn-recalibration]") {
  // x -> Conv 3x3 -> bn1 -> Relu -> Conv 1x1 -> bn2: the 1x1 conv keeps the hand computation short.
  ir::model m = ir::make_model("conv_bn_relu_conv_bn", 13);
  ir::graph_builder b(m.graph(), 3);
  ir::value* x = b.input("x", ir::data_type::float32, {4, 3, 6, 6});
  ir::value* conv1 = b.conv(x, 4, {}, "conv1");
  ir::value* conv2 = b.conv(b.relu(b.batch_norm(conv1, 1e-5f, "bn1")), 5, {.kernel = 1}, "conv2");
  b.output(b.batch_norm(conv2, 1e-5f, "bn2"));
  make_statistics_wrong(m.graph(), "bn1");
  make_statistics_wrong(m.graph(), "bn2");
  const std::vector<runtime::tensor_map> batches{{{"x", random_input({4, 3, 6, 6}, 11, 0.5f)}}};

  // bn1 sees conv1's output whatever the statistics are.
  nchw t1 = nchw_of(observe(m, batches[0], conv1->name()));
  const channel_statistics s1 = statistics_of(t1);
  // bn2 sees conv2 applied to bn1's output normalized with the batch's own statistics.
  const ir::graph& g = m.graph();
  const std::vector<double> scale1 = doubles_of(find_node(g, "bn1")->input(1));
  const std::vector<double> bias1 = doubles_of(find_node(g, "bn1")->input(2));
  const std::vector<double> w2 = doubles_of(find_node(g, "conv2")->input(1));
  const std::vector<double> b2 = doubles_of(find_node(g, "conv2")->input(2));
  nchw t2{{4, 5, 6, 6}, std::vector<double>(4 * 5 * 36, 0.0)};
  for (std::int64_t n = 0; n < 4; ++n) {
    for (std::int64_t o = 0; o < 5; ++o) {
      for (std::int64_t k = 0; k < 36; ++k) {
        double sum = b2[static_cast<std::size_t>(o)];
        for (std::int64_t c = 0; c < 4; ++c) {
          const auto ci = static_cast<std::size_t>(c);
          const double y1 = (t1.at(n, c, k) - s1.mean[ci]) / std::sqrt(s1.var[ci] + 1e-5) * scale1[ci] + bias1[ci];
          sum += w2[static_cast<std::size_t>(o * 4 + c)] * std::max(y1, 0.0);
        }
        t2.at(n, o, k) = sum;
      }
    }
  }
  const channel_statistics s2 = statistics_of(t2);

  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches, {.threads = 1});
  CHECK(r.layers == 2);
  CHECK(r.batches == 1);
  CHECK(r.samples == 4 * 36);
  CHECK(ir::find_problems(m.graph()).empty());
  require_close(running_mean(g, "bn1"), s1.mean);
  require_close(running_var(g, "bn1"), unbiased(s1));
  require_close(running_mean(g, "bn2"), s2.mean);
  require_close(running_var(g, "bn2"), unbiased(s2));

  SECTION("and recalibrating again on the same batch gives the same statistics") {
    const std::string mean2 = bytes_of(find_node(g, "bn2")->input(3));
    const std::string var2 = bytes_of(find_node(g, "bn2")->input(4));
    (void)prune::recalibrate_batch_norm(m, batches, {.threads = 1});
    CHECK(bytes_of(find_node(g, "bn2")->input(3)) == mean2);
    CHECK(bytes_of(find_node(g, "bn2")->input(4)) == var2);
  }
}

TEST_CASE("recalibration averages batch means and unbiased batch variances over batches, not pooled statistics",
          "[prune][bn-recalibration]") {
  ir::model m = single_batch_norm({2, 3, 4, 4});
  // The second batch sits far from the first: pooling would add the spread between batches.
  const std::vector<runtime::tensor_map> batches{{{"x", random_input({2, 3, 4, 4}, 21, 0.0f)}},
                                                 {{"x", random_input({2, 3, 4, 4}, 22, 4.0f)}},
                                                 {{"x", random_input({2, 3, 4, 4}, 23, -1.0f)}}};
  std::vector<double> mean(3, 0.0), var(3, 0.0);
  for (const runtime::tensor_map& batch : batches) {
    const channel_statistics s = statistics_of(nchw_of(batch.at("x")));
    const std::vector<double> v = unbiased(s);
    for (std::size_t c = 0; c < 3; ++c) {
      mean[c] += s.mean[c] / 3.0;
      var[c] += v[c] / 3.0;
    }
  }

  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
  CHECK(r.layers == 1);
  CHECK(r.batches == 3);
  CHECK(r.samples == 3 * 2 * 16);
  require_close(running_mean(m.graph(), "bn"), mean);
  require_close(running_var(m.graph(), "bn"), var);

  // The pooled variance of all 96 values per channel is far larger: the test tells them apart.
  nchw all{{6, 3, 4, 4}, {}};
  for (const runtime::tensor_map& batch : batches) {
    const nchw x = nchw_of(batch.at("x"));
    all.values.insert(all.values.end(), x.values.begin(), x.values.end());
  }
  const std::vector<double> pooled = unbiased(statistics_of(all));
  for (std::size_t c = 0; c < 3; ++c) CHECK(pooled[c] > 2.0 * var[c]);
}

TEST_CASE("recalibration changes only the chosen inference-form batch norms", "[prune][bn-recalibration]") {
  ir::model m = three_batch_norms();
  ir::graph& g = m.graph();
  const std::vector<runtime::tensor_map> batches{{{"x", random_input({4, 3, 5, 5}, 31, 1.0f)}}};
  const auto stored = [&](const std::string& bn) {
    return bytes_of(find_node(g, bn)->input(3)) + bytes_of(find_node(g, bn)->input(4));
  };
  const std::string a = stored("bn_a"), b = stored("bn_b"), c = stored("bn_c");

  SECTION("options.nodes names the ones to recalibrate") {
    const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches, {.nodes = {"bn_b"}});
    CHECK(r.layers == 1);
    CHECK(stored("bn_a") == a);
    CHECK(stored("bn_b") != b);
    CHECK(stored("bn_c") == c);
  }

  SECTION("a mean shared with another node keeps its values for that node") {
    ir::value* shared_mean = find_node(g, "bn_a")->input(3);
    g.add_output(g.add_node({"Identity", {shared_mean}, {"mean_copy"}, {}, "keep_mean", {}})->output(0));
    const std::string before = bytes_of(shared_mean);
    const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
    CHECK(r.layers == 3);
    CHECK(ir::find_problems(g).empty());
    CHECK(find_node(g, "keep_mean")->input(0) == shared_mean);
    CHECK(bytes_of(shared_mean) == before);
    REQUIRE(find_node(g, "bn_a")->input(3) != shared_mean);
    require_close(running_mean(g, "bn_a"), statistics_of(nchw_of(batches[0].at("x"))).mean);
  }

  SECTION("a tensor shared with a batch norm left out stays as it was for it") {
    g.set_input(find_node(g, "bn_b"), 3, find_node(g, "bn_a")->input(3));
    const std::string a_mean = bytes_of(find_node(g, "bn_a")->input(3));
    (void)prune::recalibrate_batch_norm(m, batches, {.nodes = {"bn_a"}});
    CHECK(bytes_of(find_node(g, "bn_b")->input(3)) == a_mean);
    CHECK(bytes_of(find_node(g, "bn_a")->input(3)) != a_mean);
  }

  SECTION("a training-mode batch norm is left alone, but normalizes with batch statistics meanwhile") {
    find_node(g, "bn_b")->set_attribute(ir::attribute::make_int("training_mode", 1));
    const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
    CHECK(r.layers == 2);
    CHECK(stored("bn_b") == b);
    // Normalized with its batch's statistics, bn_b's output has per-channel mean equal to its
    // bias and biased variance scale^2 * v / (v + eps); float32 rounding leaves ~1e-7.
    const std::vector<double> bias_b = doubles_of(find_node(g, "bn_b")->input(2));
    const std::vector<double> mean_c = running_mean(g, "bn_c");
    for (std::size_t k = 0; k < 3; ++k) CHECK(mean_c[k] == Approx(bias_b[k]).margin(1e-5));
  }

  SECTION("a batch norm with statistics a caller can override is left alone") {
    // From IR 4 on, an initializer that is also a graph input is only a default.
    ir::value* fed = g.add_input("fed_mean", ir::value_type{true, ir::data_type::float32, ir::shape{3}});
    g.set_initializer(fed, *find_node(g, "bn_c")->input(3)->initializer());
    g.set_input(find_node(g, "bn_c"), 3, fed);
    const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
    CHECK(r.layers == 2);
    CHECK(find_node(g, "bn_c")->input(3) == fed);
    CHECK(stored("bn_c") == c);
  }

  SECTION("a node name the graph lacks is an error") {
    REQUIRE_THROWS_AS(prune::recalibrate_batch_norm(m, batches, {.nodes = {"bn_z"}}), error);
    CHECK(stored("bn_a") == a);
  }
}

TEST_CASE("recalibration works whether ReduceMean takes axes as an attribute or an input",
          "[prune][bn-recalibration]") {
  const std::int64_t opset = GENERATE(13, 17, 18);
  CAPTURE(opset);
  ir::model m = single_batch_norm({3, 4, 5, 5}, opset);
  const std::vector<runtime::tensor_map> batches{{{"x", random_input({3, 4, 5, 5}, 41, 0.25f)}}};
  const channel_statistics s = statistics_of(nchw_of(batches[0].at("x")));
  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
  CHECK(r.layers == 1);
  CHECK(ir::find_problems(m.graph()).empty());
  require_close(running_mean(m.graph(), "bn"), s.mean);
  require_close(running_var(m.graph(), "bn"), unbiased(s));
}

TEST_CASE("recalibration stores the statistics in their own element type", "[prune][bn-recalibration]") {
  // From opset 15 the mean and variance may have a type other than the input's.
  const auto [type, rel] = GENERATE(table<ir::data_type, double>({{ir::data_type::float32, tolerance},
                                                                   {ir::data_type::float64, tolerance},
                                                                   // float16 keeps 11 significant bits
                                                                   {ir::data_type::float16, 1e-3}}));
  CAPTURE(ir::to_string(type));
  ir::model m = single_batch_norm({2, 3, 4, 4}, 15);
  ir::graph& g = m.graph();
  ir::node* bn = find_node(g, "bn");
  ir::tensor like;
  like.dtype = type;
  for (std::size_t k : {3, 4}) {
    g.set_initializer(bn->input(k), ir::floats_as(like, {3}, std::vector<double>(3, 1.0)));
    bn->input(k)->set_type(ir::value_type{true, type, ir::shape{3}});
  }
  const std::vector<runtime::tensor_map> batches{{{"x", random_input({2, 3, 4, 4}, 61, 0.5f)}}};
  const channel_statistics s = statistics_of(nchw_of(batches[0].at("x")));
  (void)prune::recalibrate_batch_norm(m, batches);
  for (std::size_t k : {3, 4}) CHECK(bn->input(k)->initializer()->dtype == type);
  const std::vector<double> mean = *ir::constant_floats(bn->input(3), m.ir_version);
  const std::vector<double> var = *ir::constant_floats(bn->input(4), m.ir_version);
  const std::vector<double> expected_var = unbiased(s);
  for (std::size_t c = 0; c < 3; ++c) {
    CHECK(mean[c] == Approx(s.mean[c]).epsilon(rel));
    CHECK(var[c] == Approx(expected_var[c]).epsilon(rel));
  }
}

TEST_CASE("recalibrating the trained digits model on its training batches keeps its test accuracy",
          "[prune][bn-recalibration]") {
  ir::model m = ir::load_model(test::digits_dir() / "digits_cnn.onnx");
  const double before = test::digits_accuracy(m);
  const std::vector<runtime::tensor_map> batches = test::digits_calibration_batches();
  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
  const double after = test::digits_accuracy(m);
  WARN("digits accuracy before " << before * 100.0 << "%, after recalibration " << after * 100.0 << "% ("
                                 << r.layers << " batch norms, " << r.batches << " batches)");
  CHECK(before == Approx(0.984));
  CHECK(r.layers == 4);
  CHECK(r.batches == 4);
  // The stored statistics came from the same distribution, so 128 images re-estimate them
  // closely enough to stay within 2 points of the trained model.
  CHECK(std::abs(after - before) <= 0.02);
}

TEST_CASE("recalibration refuses no batches and batches with one value per channel", "[prune][bn-recalibration]") {
  SECTION("no batches") {
    ir::model m = single_batch_norm({2, 3, 4, 4});
    try {
      (void)prune::recalibrate_batch_norm(m, std::span<const runtime::tensor_map>{});
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_argument);
    }
  }
  SECTION("one value per channel") {
    ir::model m = single_batch_norm({1, 3, 1, 1});
    const std::string before = ir::serialize_model(m);
    const std::vector<runtime::tensor_map> batches{{{"x", random_input({1, 3, 1, 1}, 51)}}};
    try {
      (void)prune::recalibrate_batch_norm(m, batches);
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("'bn' (BatchNormalization)"));
      CHECK_THAT(e.what(), Catch::Contains("needs at least 2"));
    }
    CHECK(ir::serialize_model(m) == before);
  }
}
