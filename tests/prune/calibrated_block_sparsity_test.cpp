// Calibrated block sparsity: the errors it reports are the output errors measured on the
// calibration rows, it beats magnitude on correlated inputs, it removes exactly its share of
// whole blocks, and the magnitude pass that runs the result finds exactly those blocks.

#include "inferopt/prune/calibrated_block_sparsity.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "inferopt/pass.hpp"
#include "inferopt/sparse/sparsify_blocks.hpp"
#include "prune_test_util.hpp"

using namespace inferopt;

namespace {

constexpr std::int64_t features = 48, outputs = 40, rows = 600;

/// Calibration rows with correlated features and non-zero means (as after a LayerNorm):
/// x = z A + mu, z standard normal with 12 factors.
std::vector<float> correlated_rows(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> a(12 * features), mu(features), x(rows * features);
  for (float& v : a) v = normal(rng);
  for (float& v : mu) v = 0.5f * normal(rng);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> z(12);
    for (float& v : z) v = normal(rng);
    for (std::int64_t f = 0; f < features; ++f) {
      float s = mu[f] + 0.1f * normal(rng);
      for (int q = 0; q < 12; ++q) s += z[q] * a[q * features + f];
      x[r * features + f] = s;
    }
  }
  return x;
}

std::vector<float> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& e : v) e = normal(rng);
  return v;
}

/// y = x w + b, in double, [rows, outputs].
std::vector<double> layer_output(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<double> y(rows * outputs, 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < outputs; ++j) {
      double s = b.empty() ? 0.0 : b[j];
      for (std::int64_t f = 0; f < features; ++f) s += double{x[r * features + f]} * w[f * outputs + j];
      y[r * outputs + j] = s;
    }
  }
  return y;
}

double relative_error(const std::vector<double>& want, const std::vector<double>& got) {
  double e = 0.0, t = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    e += (got[i] - want[i]) * (got[i] - want[i]);
    t += want[i] * want[i];
  }
  return e / t;
}

prune::input_gram gram_of(const std::vector<float>& x) {
  prune::input_gram g(features);
  g.add(x);
  return g;
}

/// Zero blocks of `w` ([features, outputs], 8x8 blocks).
std::int64_t zero_blocks(const std::vector<float>& w, std::int64_t block_rows, std::int64_t block_cols) {
  std::int64_t zeros = 0;
  for (std::int64_t rb = 0; rb * block_rows < features; ++rb) {
    for (std::int64_t cb = 0; cb * block_cols < outputs; ++cb) {
      bool zero = true;
      for (std::int64_t i = rb * block_rows; i < std::min(features, (rb + 1) * block_rows); ++i) {
        for (std::int64_t j = cb * block_cols; j < std::min(outputs, (cb + 1) * block_cols); ++j) zero = zero && w[i * outputs + j] == 0.0f;
      }
      zeros += zero ? 1 : 0;
    }
  }
  return zeros;
}

/// 8x8 blocks chosen 16 rows at a time: a 6 x 5 grid on the test layer.
prune::block_sparsity_options eight_by_eight(double sparsity) {
  prune::block_sparsity_options o;
  o.block_rows = 8;
  o.block_cols = 8;
  o.chunk_rows = 16;
  o.sparsity = sparsity;
  return o;
}

}  // namespace

TEST_CASE("calibrated block sparsity reports the output error measured on the calibration rows, below magnitude's", "[prune][block-sparsity]") {
  const std::vector<float> x = correlated_rows(1), w = random_values(features * outputs, 2), b = random_values(outputs, 3);
  const prune::block_sparsity_options o = eight_by_eight(0.5);
  const prune::block_sparsity_result r = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);

  CHECK(r.blocks_total == 6 * 5);
  CHECK(r.blocks_removed == 15);
  CHECK(zero_blocks(r.weight, 8, 8) == 15);
  const std::vector<double> want = layer_output(x, w, b);
  CHECK(r.relative_error == Approx(relative_error(want, layer_output(x, r.weight, r.bias))).epsilon(1e-3));
  // Correlated inputs let the kept rows stand in for the removed ones: far less error.
  CHECK(r.relative_error < 0.5 * r.relative_error_magnitude);
  CHECK(r.relative_error_magnitude > 0.0);
}

TEST_CASE("calibrated block sparsity with partial edge blocks removes its rounded share of the grid", "[prune][block-sparsity]") {
  const std::vector<float> x = correlated_rows(4), w = random_values(features * outputs, 5);
  prune::block_sparsity_options o;
  o.block_rows = 16;
  o.block_cols = 16;  // 48 x 40: a 3 x 3 grid whose last column of blocks is 8 wide
  o.sparsity = 0.75;
  const prune::block_sparsity_result r = prune::sparsify_blocks_calibrated(gram_of(x), w, {}, outputs, o);
  CHECK(r.blocks_total == 9);
  CHECK(r.blocks_removed == 7);
  CHECK(zero_blocks(r.weight, 16, 16) == 7);
  CHECK(r.bias.empty());
  CHECK(r.relative_error == Approx(relative_error(layer_output(x, w, {}), layer_output(x, r.weight, {}))).epsilon(1e-3));
}

TEST_CASE("with every block removed the bias becomes the mean output, and with none nothing changes", "[prune][block-sparsity]") {
  const std::vector<float> x = correlated_rows(6), w = random_values(features * outputs, 7), b = random_values(outputs, 8);
  prune::block_sparsity_options o;
  o.sparsity = 1.0;
  const prune::block_sparsity_result all = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);
  const std::vector<double> y = layer_output(x, w, b);
  for (std::int64_t j = 0; j < outputs; ++j) {
    double mean = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) mean += y[r * outputs + j] / rows;
    CAPTURE(j);
    CHECK(all.bias[j] == Approx(mean).epsilon(1e-4).margin(1e-4));
  }
  CHECK(zero_blocks(all.weight, 16, 16) == all.blocks_total);

  o.sparsity = 0.0;
  const prune::block_sparsity_result none = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);
  CHECK(none.weight == w);
  CHECK(none.bias == b);
  CHECK(none.relative_error == Approx(0.0).margin(1e-12));
}

TEST_CASE("greedy block removal refits every kept weight: lower error than one pass over the rows, same share of blocks", "[prune][block-sparsity]") {
  const std::vector<float> x = correlated_rows(1), w = random_values(features * outputs, 2), b = random_values(outputs, 3);
  prune::block_sparsity_options o = eight_by_eight(0.0);
  const std::vector<double> want = layer_output(x, w, b);
  for (double sparsity : {0.25, 0.5, 0.75}) {
    CAPTURE(sparsity);
    o.sparsity = sparsity;
    o.greedy = false;
    const prune::block_sparsity_result one_pass = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);
    o.greedy = true;
    const prune::block_sparsity_result greedy = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);
    CHECK(greedy.blocks_removed == one_pass.blocks_removed);
    CHECK(zero_blocks(greedy.weight, 8, 8) == greedy.blocks_removed);
    CHECK(greedy.relative_error == Approx(relative_error(want, layer_output(x, greedy.weight, greedy.bias))).epsilon(1e-3));
    CHECK(greedy.relative_error < one_pass.relative_error);
  }
  o.sparsity = 0.0;
  const prune::block_sparsity_result none = prune::sparsify_blocks_calibrated(gram_of(x), w, b, outputs, o);
  CHECK(none.weight == w);
  CHECK(none.bias == b);
}

TEST_CASE("calibrated block sparsity refuses bad sizes, options and empty moments", "[prune][block-sparsity]") {
  const std::vector<float> w = random_values(features * outputs, 9);
  prune::block_sparsity_options o;
  CHECK_THROWS_WITH(prune::sparsify_blocks_calibrated(prune::input_gram(features), w, {}, outputs, o), Catch::Contains("no calibration rows"));
  CHECK_THROWS_WITH(prune::sparsify_blocks_calibrated(gram_of(correlated_rows(1)), w, {}, outputs + 1, o), Catch::Contains("weight must be"));
  o.sparsity = 1.5;
  CHECK_THROWS_WITH(prune::sparsify_blocks_calibrated(gram_of(correlated_rows(1)), w, {}, outputs, o), Catch::Contains("sparsity"));
}

namespace {

/// x[32, 64] -> MatMul W[64, 64] + b -> Relu -> Gemm(transB) [48 outputs] -> y, and its batches.
ir::model two_layer_mlp() {
  return test::build_model({32, 64}, [](ir::graph_builder& g, ir::value* x) {
    ir::value* h = g.relu(g.add(g.matmul(x, g.random_constant("w", {64, 64}, 0.3f)), g.random_constant("b", {64}, 0.2f)));
    return g.gemm(h, 48);
  });
}

/// Two residual blocks, r = x + L2(relu(L1(x))), y = r + L4(relu(L3(r))), each L a MatMul
/// [64, 64] + bias: L2's and L4's outputs are only added to the residual stream.
ir::model residual_mlp() {
  return test::build_model({32, 64}, [](ir::graph_builder& g, ir::value* x) {
    const auto linear = [&](ir::value* in, std::int64_t k, std::int64_t n, const std::string& name) {
      return g.add(g.matmul(in, g.random_constant("w" + name, {k, n}, 0.3f)), g.random_constant("b" + name, {n}, 0.2f));
    };
    ir::value* r = g.add(x, linear(g.relu(linear(x, 64, 64, "1")), 64, 64, "2"));
    return g.add(r, linear(g.relu(linear(r, 64, 256, "3")), 256, 64, "4"));
  });
}

/// sum || y' - y ||^2 / sum || y ||^2 of the first output over `feeds`.
double output_error(const ir::model& reference, const ir::model& changed, const std::vector<runtime::tensor_map>& feeds) {
  runtime::session a(reference, {.threads = 1}), b(changed, {.threads = 1});
  double error = 0.0, energy = 0.0;
  for (const auto& f : feeds) {
    const std::vector<float> y = a.run(f).begin()->second.to_float(), y2 = b.run(f).begin()->second.to_float();
    for (std::size_t i = 0; i < y.size(); ++i) {
      error += (double{y2[i]} - y[i]) * (double{y2[i]} - y[i]);
      energy += double{y[i]} * y[i];
    }
  }
  return error / energy;
}

/// `count` seeded random batches for `m`.
std::vector<runtime::tensor_map> seeded_batches(const ir::model& m, int count, std::uint64_t seed) {
  runtime::session probe(m, {.threads = 1});
  std::vector<runtime::tensor_map> out;
  for (int k = 0; k < count; ++k) out.push_back(runtime::random_inputs(probe, seed + static_cast<std::uint64_t>(k)));
  return out;
}

std::vector<const ir::node*> products(const ir::model& m) {
  std::vector<const ir::node*> out;
  for (const ir::node* n : m.graph().nodes()) {
    if (n->is("MatMul") || n->is("Gemm")) out.push_back(n);
  }
  return out;
}

/// A copy of `m` with calibrated block sparsity applied to every product, and what it did.
struct sparsified {
  ir::model model;
  std::vector<prune::block_sparsity_layer> layers;
};

sparsified sparsified_copy(const ir::model& m, const std::vector<runtime::tensor_map>& feeds, const prune::block_sparsity_options& o) {
  sparsified out{m.clone(), {}};
  out.layers = prune::apply_calibrated_block_sparsity(out.model, products(out.model), feeds, o);
  return out;
}

}  // namespace

TEST_CASE("the magnitude pass at the same sparsity runs exactly the calibrated weights", "[prune][block-sparsity]") {
  const ir::model original = two_layer_mlp();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(original, 4, 20);

  sparse::sparsify_options settings;
  settings.sparsity = 0.5;
  settings.min_size = 0;
  ir::model m = original.clone();
  std::vector<const ir::node*> layers;
  for (const sparse::sparsify_candidate& c : sparse::plan_sparsify(m, settings, sparse::dense_baseline::avx2)) {
    REQUIRE(c.declined.empty());
    layers.push_back(c.at);
  }
  REQUIRE(layers.size() == 2);
  prune::block_sparsity_options o;
  o.sparsity = 0.5;
  const auto done = prune::apply_calibrated_block_sparsity(m, layers, feeds, o);
  REQUIRE(done.size() == 2);
  CHECK(done[0].bias_updated);
  CHECK(done[1].bias_updated);
  CHECK(done[0].result.blocks_removed == 8);
  CHECK(done[1].result.blocks_removed == 6);
  CHECK(done[0].result.relative_error < done[0].result.relative_error_magnitude);

  ir::model rewritten = m.clone();
  auto pass = std::make_unique<sparse::sparsify_blocks>();
  pass->set_option("sparsity", "0.5");
  pass->set_option("min-size", "0");
  pipeline p;
  p.steps.emplace_back().single = std::move(pass);
  const run_report report = pass_manager().run(p, rewritten);
  REQUIRE(report.passes[0].rewrites == 2);

  runtime::session dense(m, {.threads = 1}), sparse_run(rewritten, {.threads = 1});
  for (const auto& f : feeds) {
    const std::vector<float> a = dense.run(f).begin()->second.to_float(), b = sparse_run.run(f).begin()->second.to_float();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == Approx(a[i]).margin(1e-4));
  }
}

TEST_CASE("sequential block sparsity refits each layer towards the original output: the last layer's error is the model's", "[prune][block-sparsity]") {
  const ir::model original = two_layer_mlp();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(original, 6, 40);
  prune::block_sparsity_options o;
  o.sparsity = 0.5;

  ir::model one_shot = original.clone();
  (void)prune::apply_calibrated_block_sparsity(one_shot, products(one_shot), feeds, o);
  o.sequential = true;
  ir::model sequential = original.clone();
  const auto done = prune::apply_calibrated_block_sparsity(sequential, products(sequential), feeds, o);
  REQUIRE(done.size() == 2);
  CHECK(done[0].result.blocks_removed == 8);
  CHECK(done[1].result.blocks_removed == 6);

  // The Gemm writes y, and its objective is || X' W' - X W || on the changed model's input.
  const double measured = output_error(original, sequential, feeds);
  CHECK(done[1].result.relative_error == Approx(measured).epsilon(1e-3));
  CHECK(measured < output_error(original, one_shot, feeds));
}

TEST_CASE("block-sparsity sensitivity: the allocation's error table, and layers measured apart are its rows", "[prune][block-sparsity]") {
  const ir::model m = two_layer_mlp();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(m, 4, 30);
  const std::vector<const ir::node*> layers = products(m);
  REQUIRE(layers.size() == 2);
  prune::block_sparsity_options o;
  o.max_layer_sparsity = 0.5;
  const auto all = prune::measure_block_sparsity_sensitivity(m, layers, feeds, o);
  REQUIRE(all.size() == 2);
  CHECK(all[0].node == layers[0]->label());
  CHECK(all[0].levels == std::vector<double>{0.0, 1 / 16.0, 2 / 16.0, 3 / 16.0, 4 / 16.0, 5 / 16.0, 6 / 16.0, 7 / 16.0, 0.5});
  for (const auto& row : all) {
    CHECK(row.relative_error.front() < 1e-12);  // nothing removed: rounding only
    CHECK(std::is_sorted(row.relative_error.begin(), row.relative_error.end()));
    CHECK(row.relative_error.back() > 0.0);
  }
  // One layer at a time, in one small gram pass each: the same rows, bit for bit.
  CHECK(prune::measure_block_sparsity_sensitivity(m, {layers[1]}, feeds, o, 1)[0].relative_error == all[1].relative_error);
  CHECK(prune::measure_block_sparsity_sensitivity(m, {layers[0]}, feeds, o)[0].relative_error == all[0].relative_error);
  // apply_calibrated_block_sparsity's allocation reads the same table.
  std::vector<std::vector<double>> table;
  o.allocate = true;
  ir::model applied = m.clone();
  (void)prune::apply_calibrated_block_sparsity(applied, products(applied), feeds, o, std::int64_t{512} << 20, &table);
  REQUIRE(table.size() == 2);
  CHECK(table[0] == all[0].relative_error);
  CHECK(table[1] == all[1].relative_error);
}

TEST_CASE("greedy block removal predicts the error table from its removal order: the solved layers' errors", "[prune][block-sparsity]") {
  const ir::model m = two_layer_mlp();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(m, 4, 31);
  prune::block_sparsity_options o;
  o.greedy = true;
  const auto table = prune::measure_block_sparsity_sensitivity(m, products(m), feeds, o);
  REQUIRE(table.size() == 2);
  for (std::size_t level : {0, 3, 8, 13, 15}) {
    CAPTURE(level);
    o.sparsity = table[0].levels[level];
    ir::model solved = m.clone();
    const auto layers = prune::apply_calibrated_block_sparsity(solved, products(solved), feeds, o);
    for (std::size_t l = 0; l < 2; ++l) CHECK(table[l].relative_error[level] == Approx(layers[l].result.relative_error).epsilon(1e-6).margin(1e-9));
  }
  CHECK(table[0].relative_error.back() > table[0].relative_error[8]);
}

TEST_CASE("sequential block sparsity towards the residual sum: the last layer aims at the model output, less the stream as changed", "[prune][block-sparsity]") {
  const ir::model original = residual_mlp();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(original, 24, 50);
  prune::block_sparsity_options o;
  o.sparsity = 0.5;
  o.block_rows = o.block_cols = 8;
  o.sequential = true;
  const auto [sequential, plain] = sparsified_copy(original, feeds, o);
  o.residual_target = true;
  const auto [residual, towards_sum] = sparsified_copy(original, feeds, o);
  REQUIRE(plain.size() == 4);
  REQUIRE(towards_sum.size() == 4);

  // The first block's stream is the graph input, unchanged: its layers solve the same problem.
  const auto weight = [](const ir::model& m, std::size_t layer) { return ir::constant_floats(products(m)[layer]->input(1), m.ir_version).value(); };
  for (std::size_t layer = 0; layer < 3; ++layer) {
    CAPTURE(layer);
    CHECK(weight(residual, layer) == weight(sequential, layer));
  }
  // The last layer aims at the model's output y: its reported error is the model's, relative to
  // y - r', the part of y it has to make (r' the stream as the sparsified first block leaves it).
  std::string stream;  // the last Add's first input: r
  for (const ir::node* n : residual.graph().nodes()) stream = n->input(0)->name();
  std::vector<float> stream_changed;
  runtime::session_options watch{.threads = 1};
  watch.on_value = [&](std::string_view v, const runtime::tensor& t) {
    if (v == stream) stream_changed = t.to_float();
  };
  runtime::session reference(original, {.threads = 1}), changed(residual, watch);
  double error = 0.0, aimed = 0.0;
  for (const auto& f : feeds) {
    const std::vector<float> y = reference.run(f).begin()->second.to_float(), y2 = changed.run(f).begin()->second.to_float();
    REQUIRE(stream_changed.size() == y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      error += (double{y2[i]} - y[i]) * (double{y2[i]} - y[i]);
      aimed += (double{y[i]} - stream_changed[i]) * (double{y[i]} - stream_changed[i]);
    }
  }
  CHECK(towards_sum[3].result.relative_error == Approx(error / aimed).epsilon(1e-3));
  CHECK(weight(residual, 3) != weight(sequential, 3));
  CHECK(towards_sum[3].result.blocks_removed == plain[3].result.blocks_removed);
}

namespace {

/// y = 10 (x W1 + b1) + (x W2 + b2): two layers alike, one of them amplified on the way out.
ir::model amplified_pair() {
  return test::build_model({32, 64}, [](ir::graph_builder& g, ir::value* x) {
    const auto linear = [&](const std::string& name) {
      return g.add(g.matmul(x, g.random_constant("w" + name, {64, 64}, 0.3f)), g.random_constant("b" + name, {64}, 0.2f));
    };
    ir::value* amplified = g.mul(linear("1"), g.constant("ten", {1}, {10.0f}));  // first in graph order
    return g.add(amplified, linear("2"));
  });
}

/// 1 - the mean over `feeds` of the cosine between the two models' first outputs.
double cosine_drop(const ir::model& reference, const ir::model& changed, const std::vector<runtime::tensor_map>& feeds) {
  runtime::session a(reference, {.threads = 1}), b(changed, {.threads = 1});
  double drop = 0.0;
  for (const auto& f : feeds) {
    const std::vector<float> y = a.run(f).begin()->second.to_float(), y2 = b.run(f).begin()->second.to_float();
    double xy = 0.0, xx = 0.0, yy = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      xy += double{y[i]} * y2[i];
      xx += double{y[i]} * y[i];
      yy += double{y2[i]} * y2[i];
    }
    drop += 1.0 - xy / std::sqrt(xx * yy);
  }
  return drop / static_cast<double>(feeds.size());
}

}  // namespace

TEST_CASE("end-to-end block-sparsity sensitivity: each layer alone sparsified, the output's cosine drop measured", "[prune][block-sparsity]") {
  const ir::model m = amplified_pair();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(m, 6, 60);
  prune::block_sparsity_options o;
  o.block_rows = o.block_cols = 8;
  o.end_to_end = true;
  o.measure_batches = 4;
  const auto rows = prune::measure_block_sparsity_sensitivity(m, products(m), feeds, o);
  REQUIRE(rows.size() == 2);
  const std::vector<runtime::tensor_map> measured(feeds.begin(), feeds.begin() + 4);
  for (std::size_t l = 0; l < 2; ++l) {
    CAPTURE(l);
    REQUIRE(rows[l].cosine_drop.size() == rows[l].levels.size());
    CHECK(rows[l].cosine_drop.front() == 0.0);
    CHECK(std::is_sorted(rows[l].cosine_drop.begin(), rows[l].cosine_drop.end()));
    // At a measured level (eighths): the drop of the model with that layer alone solved there.
    for (std::size_t level : {4, 8, 14}) {
      CAPTURE(level);
      prune::block_sparsity_options alone = o;
      alone.end_to_end = false;
      alone.sparsity = rows[l].levels[level];
      ir::model one = m.clone();
      (void)prune::apply_calibrated_block_sparsity(one, {products(one)[l]}, feeds, alone);
      CHECK(rows[l].cosine_drop[level] == Approx(cosine_drop(m, one, measured)).epsilon(1e-6).margin(1e-12));
    }
    // Between measured levels: halfway.
    CHECK(rows[l].cosine_drop[5] == Approx(0.5 * (rows[l].cosine_drop[4] + rows[l].cosine_drop[6])));
  }
  // Own errors alike, effects a hundredfold apart.
  CHECK(rows[0].relative_error[8] == Approx(rows[1].relative_error[8]).epsilon(0.5));
  CHECK(rows[0].cosine_drop[8] > 20.0 * rows[1].cosine_drop[8]);
}

TEST_CASE("allocating by end-to-end sensitivity spares the amplified layer and keeps the output closer", "[prune][block-sparsity]") {
  const ir::model original = amplified_pair();
  const std::vector<runtime::tensor_map> feeds = seeded_batches(original, 6, 70);
  prune::block_sparsity_options o;
  o.block_rows = o.block_cols = 8;
  o.sparsity = 0.5;
  o.allocate = true;
  const auto [by_layer, own] = sparsified_copy(original, feeds, o);
  o.end_to_end = true;
  const auto [by_output, measured] = sparsified_copy(original, feeds, o);
  REQUIRE(own.size() == 2);
  REQUIRE(measured.size() == 2);
  const auto share = [](const prune::block_sparsity_layer& l) { return static_cast<double>(l.result.blocks_removed) / l.result.blocks_total; };
  CHECK(share(measured[0]) + share(measured[1]) == Approx(1.0));  // the same budget
  CHECK(share(measured[1]) > share(measured[0]) + 0.5);
  CHECK(std::abs(share(own[1]) - share(own[0])) < 0.5);
  CHECK(cosine_drop(original, by_output, feeds) < 0.5 * cosine_drop(original, by_layer, feeds));
  // Each layer reports the table's value at its sparsity: what it was predicted to cost alone.
  const auto table = prune::measure_block_sparsity_sensitivity(original, products(original), feeds, o);
  for (std::size_t l = 0; l < 2; ++l) {
    CAPTURE(l);
    CHECK(measured[l].sensitivity == table[l].cosine_drop[static_cast<std::size_t>(std::lround(16 * share(measured[l])))]);
    CHECK(own[l].sensitivity == table[l].relative_error[static_cast<std::size_t>(std::lround(16 * share(own[l])))]);
  }
}
