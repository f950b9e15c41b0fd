// quantize_qdq: Q/DQ placement from a range table, checked structurally and against the float
// model in our executor.
//
// Metrics: quantization error is not rounding error, so the numeric checks state their own
// bounds: the largest logit difference relative to the largest float logit stays under 5%
// (8-bit activations and weights over 2-4 layers of He-initialized weights give 1.5-3%),
// and top-1 agrees on at least 90% of 64 random samples (random weights leave some samples
// with near ties, which a 1% perturbation may flip).

#include "inferopt/quant/qdq.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include <catch2/catch.hpp>

#include "fusion_test_util.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"
#include "small_cnn.hpp"

using namespace inferopt;

namespace {

/// Min/max of every tensor (graph inputs included) over runs on seeded random inputs: a
/// stand-in for the calibrators, which live elsewhere.
quant::range_table observe_ranges(const ir::model& m, int runs = 8) {
  quant::range_table table;
  const auto record = [&](std::string_view name, const runtime::tensor& t) {
    if (t.dtype() != ir::data_type::float32 || t.element_count() == 0) return;
    const auto v = t.values<float>();
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    auto [it, added] = table.try_emplace(std::string(name), quant::tensor_range{*lo, *hi});
    if (!added) {
      it->second.min = std::min<double>(it->second.min, *lo);
      it->second.max = std::max<double>(it->second.max, *hi);
    }
  };
  runtime::session_options options;
  options.threads = 1;
  options.on_value = record;
  runtime::session s(m, options);
  for (int seed = 1; seed <= runs; ++seed) {
    const runtime::tensor_map feed = runtime::random_inputs(s, static_cast<std::uint64_t>(seed));
    for (const auto& [name, t] : feed) record(name, t);
    (void)s.run(feed);
  }
  return table;
}

/// Float and quantized logits of the first output on the same random inputs.
struct logits_pair {
  std::vector<float> reference;
  std::vector<float> quantized;
  std::int64_t classes = 0;
};

logits_pair run_both(const ir::model& float_model, const ir::model& qdq_model, std::uint64_t seed) {
  runtime::session_options options;
  options.threads = 1;
  runtime::session a(float_model, options);
  runtime::session b(qdq_model, options);
  const runtime::tensor_map feed = runtime::random_inputs(a, seed);
  const std::string out = float_model.graph().outputs()[0]->name();
  const runtime::tensor ya = a.run(feed).at(out);
  const runtime::tensor yb = b.run(feed).at(out);
  REQUIRE(ya.shape() == yb.shape());
  logits_pair p;
  p.reference.assign(ya.values<float>().begin(), ya.values<float>().end());
  p.quantized.assign(yb.values<float>().begin(), yb.values<float>().end());
  p.classes = ya.shape().back();
  return p;
}

/// max |q - r| / max |r| over all logits.
double relative_error(const logits_pair& p) {
  double diff = 0.0;
  double scale = 0.0;
  for (std::size_t i = 0; i < p.reference.size(); ++i) {
    diff = std::max(diff, std::abs(double(p.quantized[i]) - p.reference[i]));
    scale = std::max(scale, std::abs(double(p.reference[i])));
  }
  return diff / scale;
}

/// Fraction of rows whose arg-max agrees.
double top1_agreement(const logits_pair& p) {
  const auto rows = static_cast<std::int64_t>(p.reference.size()) / p.classes;
  std::int64_t same = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto ra = p.reference.begin() + r * p.classes;
    const auto qa = p.quantized.begin() + r * p.classes;
    same += (std::max_element(ra, ra + p.classes) - ra) == (std::max_element(qa, qa + p.classes) - qa) ? 1 : 0;
  }
  return double(same) / double(rows);
}

/// One attribute as a list (attributes move, so a braced list cannot hold them).
std::vector<ir::attribute> one(ir::attribute a) {
  std::vector<ir::attribute> out;
  out.push_back(std::move(a));
  return out;
}

ir::model copy_of(const ir::model& m) { return ir::parse_model(ir::serialize_model(m)); }

/// The node producing `v`, or null.
ir::node* producer(const ir::value* v) { return v ? v->producer() : nullptr; }

bool from_dq(const ir::value* v) { return producer(v) && producer(v)->is("DequantizeLinear"); }

/// The constant read by input `i` of the DequantizeLinear producing `v`.
const ir::tensor& dq_constant(const ir::value* v, std::size_t i) {
  REQUIRE(from_dq(v));
  const ir::value* c = producer(v)->input(i);
  REQUIRE(c);
  REQUIRE(c->initializer());
  return *c->initializer();
}

/// The scale of the Q/DQ pair feeding `v`.
float pair_scale(const ir::value* v) { return dq_constant(v, 1).values<float>().at(0); }

ir::node* first_op(const ir::graph& g, std::string_view op) {
  for (ir::node* n : g.nodes()) {
    if (n->is(op)) return n;
  }
  return nullptr;
}

std::vector<ir::node*> ops(const ir::graph& g, std::string_view op) {
  std::vector<ir::node*> out;
  for (ir::node* n : g.nodes()) {
    if (n->is(op)) out.push_back(n);
  }
  return out;
}

using test::small_cnn;

/// Quantizes a copy and checks the structural verifier and the ONNX checker.
std::pair<ir::model, quant::qdq_report> quantized(const ir::model& m, const quant::range_table& ranges,
                                                  const quant::qdq_options& options = {}) {
  ir::model q = copy_of(m);
  quant::qdq_report r = quant::quantize_qdq(q, ranges, options);
  CHECK(ir::find_problems(q.graph()).empty());
  CHECK_NOTHROW(ir::check_with_onnx(q));
  return {std::move(q), std::move(r)};
}

/// Writes the model where INFEROPT_QDQ_OUT points (a folder), for checking it with ONNX
/// Runtime outside the test.
void maybe_save(const ir::model& m, const std::string& file) {
  if (const char* dir = std::getenv("INFEROPT_QDQ_OUT")) ir::save_model(m, std::filesystem::path(dir) / file);
}

}  // namespace

TEST_CASE("quantize_qdq puts Q/DQ before every weighted op and int8 weights behind DequantizeLinear",
          "[quant][qdq]") {
  const ir::model m = small_cnn();
  REQUIRE(test::count_ops(m.graph(), "BatchNormalization") == 0);
  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  maybe_save(q, "small_cnn_qdq.onnx");
  const ir::graph& g = q.graph();

  CHECK(r.nodes_quantized == 4);  // two Conv, GlobalAveragePool, Gemm
  CHECK(r.weights_quantized == 3);
  CHECK(r.biases_quantized == 3);
  CHECK(r.activations_quantized == 5);  // x, both Relu outputs, pool output, Flatten output
  CHECK(r.skipped.empty());
  CHECK_FALSE(r.opset_raised);
  CHECK(test::count_ops(g, "QuantizeLinear") == 5);
  CHECK(test::count_ops(g, "DequantizeLinear") == 5 + 3 + 3);
  CHECK(test::output_names(g) == test::output_names(m.graph()));

  for (ir::node* n : ops(g, "Conv")) {
    CAPTURE(n->name());
    CHECK(from_dq(n->input(0)));
    CHECK(dq_constant(n->input(1), 0).dtype == ir::data_type::int8);
    CHECK(producer(n->input(1))->attr_int("axis", -1) == 0);
    CHECK(dq_constant(n->input(2), 0).dtype == ir::data_type::int32);
    // The activation range is the Relu's (post-activation) one, so a Conv's input never reads a
    // Conv output directly: it reads a DQ of a Relu output or of the graph input.
    const ir::value* x = producer(n->input(0))->input(0);
    const ir::value* raw = producer(x) ? producer(x)->input(0) : x;
    CHECK((raw->name() == "x" || producer(raw)->is("Relu")));
  }
  // No Q reads a Conv output: the ranges after the fused Relu are the ones used.
  for (ir::node* n : ops(g, "QuantizeLinear")) CHECK_FALSE((producer(n->input(0)) && producer(n->input(0))->is("Conv")));

  ir::node* fc = first_op(g, "Gemm");
  REQUIRE(fc);
  CHECK(from_dq(fc->input(0)));
  CHECK(producer(fc->input(1))->attr_int("axis", -1) == 0);  // transB = 1: W is [N, K]
  ir::node* pool = first_op(g, "GlobalAveragePool");
  REQUIRE(pool);
  CHECK(from_dq(pool->input(0)));
  // The average pool's output has its own (smaller) range, not its input's.
  ir::value* pooled = pool->output(0);
  REQUIRE(pooled->uses().size() == 1);
  ir::node* pooled_q = pooled->uses()[0].user;
  REQUIRE(pooled_q->is("QuantizeLinear"));
  CHECK(pooled_q->input(1)->initializer()->values<float>().at(0) ==
        quant::symmetric_int8_scale(ranges.at(pooled->name())));
  CHECK(pooled_q->input(1)->initializer()->values<float>().at(0) < pair_scale(pool->input(0)));
}

TEST_CASE("quantize_qdq shares an average pool's scale between input and output when asked", "[quant][qdq]") {
  const ir::model m = small_cnn();
  quant::qdq_options o;
  o.average_pool_shares_scale = true;
  auto [q, r] = quantized(m, observe_ranges(m), o);
  ir::node* pool = first_op(q.graph(), "GlobalAveragePool");
  REQUIRE(pool);
  REQUIRE(pool->output(0)->uses().size() == 1);
  ir::node* pooled_q = pool->output(0)->uses()[0].user;
  REQUIRE(pooled_q->is("QuantizeLinear"));
  CHECK(pooled_q->input(1)->initializer()->values<float>().at(0) == pair_scale(pool->input(0)));
}

TEST_CASE("quantize_qdq keeps logits within 5% and top-1 on 90% of samples", "[quant][qdq]") {
  const ir::model m = small_cnn();
  const quant::range_table ranges = observe_ranges(m);
  SECTION("int8 symmetric activations, per-channel weights") {
    auto [q, r] = quantized(m, ranges);
    const logits_pair p = run_both(m, q, 100);
    CAPTURE(relative_error(p), top1_agreement(p));
    CHECK(relative_error(p) < 0.05);
    CHECK(top1_agreement(p) >= 0.9);
  }
  SECTION("uint8 asymmetric activations, per-tensor weights") {
    quant::qdq_options o;
    o.activations = quant::activation_scheme::uint8_asymmetric;
    o.weights = quant::weight_granularity::per_tensor;
    auto [q, r] = quantized(m, ranges, o);
    maybe_save(q, "small_cnn_qdq_u8.onnx");
    for (ir::node* n : ops(q.graph(), "QuantizeLinear")) {
      CHECK(n->input(2)->initializer()->dtype == ir::data_type::uint8);
    }
    for (ir::node* n : ops(q.graph(), "DequantizeLinear")) CHECK_FALSE(n->find_attribute("axis"));
    const logits_pair p = run_both(m, q, 100);
    CAPTURE(relative_error(p), top1_agreement(p));
    CHECK(relative_error(p) < 0.05);
    CHECK(top1_agreement(p) >= 0.9);
  }
}

TEST_CASE("quantize_qdq gives every reader of a shared bias its own DequantizeLinear, all names distinct",
          "[quant][qdq]") {
  // TorchScript exports share equal initializers between layers (the zero biases of a model
  // whose BatchNorms were folded); each Conv's bias is quantized with its own input scale.
  ir::model m = ir::make_model("shared_bias");
  ir::graph_builder b(m.graph(), 5);
  ir::value* x = b.input("x", ir::data_type::float32, {16, 3, 8, 8});
  ir::value* c1 = b.conv(x, 8, {}, "conv1");
  ir::value* c2 = b.conv(b.relu(c1), 8, {}, "conv2");
  ir::value* c3 = b.conv(b.relu(c2), 8, {}, "conv3");
  b.output(b.gemm(b.flatten(b.global_average_pool(b.relu(c3))), 10, "fc"));
  ir::graph& g = m.graph();
  ir::value* bias = c1->producer()->input(2);
  g.set_input(c2->producer(), 2, bias);
  g.set_input(c3->producer(), 2, bias);
  g.set_input(c3->producer(), 1, c2->producer()->input(1));  // a shared weight too
  (void)test::run_cleanups(m, "remove-unused");

  auto [q, r] = quantized(m, observe_ranges(m));
  CHECK(r.biases_quantized == 4);
  std::set<std::string> names;
  std::set<const ir::node*> bias_dqs;
  for (const ir::node* n : q.graph().nodes()) {
    CAPTURE(n->name());
    CHECK_FALSE(n->name().empty());
    CHECK(names.insert(n->name()).second);
    if (n->is("Conv")) bias_dqs.insert(producer(n->input(2)));
  }
  CHECK(bias_dqs.size() == 3);
  const ir::model reloaded = copy_of(q);  // what a consumer of the saved file sees
  CHECK(test::count_ops(reloaded.graph(), "DequantizeLinear") == test::count_ops(q.graph(), "DequantizeLinear"));
  const logits_pair p = run_both(m, q, 100);
  CAPTURE(relative_error(p));
  CHECK(relative_error(p) < 0.05);
}

TEST_CASE("quantize_qdq per-channel weight scales are max |w| over the largest code per output channel, 8 and 7 bits",
          "[quant][qdq]") {
  const int bits = GENERATE(8, 7);
  CAPTURE(bits);
  const double largest_code = bits == 8 ? 127.0 : 63.0;
  const ir::model m = small_cnn();
  const quant::range_table ranges = observe_ranges(m);
  const ir::node* conv = first_op(m.graph(), "Conv");
  const std::vector<float> w = conv->input(1)->initializer()->values<float>();
  const std::vector<float> bias = conv->input(2)->initializer()->values<float>();
  const std::int64_t channels = conv->input(1)->initializer()->dims[0];
  const auto per_channel = static_cast<std::int64_t>(w.size()) / channels;

  auto [q, r] = quantized(m, ranges, quant::qdq_options{.weight_bits = bits});
  CHECK(r.weight_bits == bits);
  ir::node* qconv = first_op(q.graph(), "Conv");
  const std::vector<std::int8_t> wq = dq_constant(qconv->input(1), 0).values<std::int8_t>();
  const std::vector<float> ws = dq_constant(qconv->input(1), 1).values<float>();
  const std::vector<std::int8_t> wz = dq_constant(qconv->input(1), 2).values<std::int8_t>();
  REQUIRE(ws.size() == static_cast<std::size_t>(channels));
  CHECK(std::all_of(wz.begin(), wz.end(), [](std::int8_t z) { return z == 0; }));
  const float sx = pair_scale(qconv->input(0));
  CHECK(sx == static_cast<float>(std::max(std::abs(ranges.at("x").min), std::abs(ranges.at("x").max)) / 127.0));

  const std::vector<std::int32_t> bq = dq_constant(qconv->input(2), 0).values<std::int32_t>();
  const std::vector<float> bs = dq_constant(qconv->input(2), 1).values<float>();
  CHECK(producer(qconv->input(2))->inputs().size() == 2);  // int32 zero point left at its default 0
  for (std::int64_t c = 0; c < channels; ++c) {
    CAPTURE(c);
    double amax = 0.0;
    for (std::int64_t i = 0; i < per_channel; ++i) amax = std::max(amax, std::abs(double(w[c * per_channel + i])));
    const float expected = static_cast<float>(amax / largest_code);
    CHECK(ws[c] == expected);
    for (std::int64_t i = 0; i < per_channel; ++i) {
      const auto k = static_cast<std::size_t>(c * per_channel + i);
      CHECK(wq[k] == static_cast<std::int8_t>(std::nearbyint(double(w[k]) / double(expected))));
      CHECK(std::abs(int(wq[k])) <= largest_code);
    }
    // int32 bias: scale s_x * s_w exactly as float, value rounded once.
    const float expected_bias_scale = static_cast<float>(double(sx) * double(expected));
    CHECK(bs[c] == expected_bias_scale);
    CHECK(bq[c] == static_cast<std::int32_t>(std::nearbyint(double(bias[c]) / double(expected_bias_scale))));
    CHECK(std::abs(double(bq[c]) * bs[c] - bias[c]) <= 0.5 * bs[c] * (1 + 1e-6));
  }
}

TEST_CASE("quantize_qdq quantizes Gemm weights along the output axis whichever transB says", "[quant][qdq]") {
  ir::model m = ir::make_model("gemm");
  ir::graph_builder b(m.graph(), 3);
  ir::value* x = b.input("x", ir::data_type::float32, {32, 16});
  ir::value* h = b.relu(b.gemm(x, 24, "fc1"));  // transB = 1, W [24, 16]
  ir::value* w2 = b.random_constant("w2", {24, 10}, 0.3f);
  ir::value* b2 = b.random_constant("b2", {10}, 0.1f);
  ir::node* fc2 = test::add_op(m.graph(), "Gemm", {h, w2, b2}, "fc2", {"logits"});
  fc2->output(0)->set_type(test::float_type({32, 10}));
  m.graph().add_output(fc2->output(0));

  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  maybe_save(q, "gemm_qdq.onnx");
  CHECK(r.nodes_quantized == 2);
  CHECK(r.biases_quantized == 2);
  const std::vector<ir::node*> gemms = ops(q.graph(), "Gemm");
  REQUIRE(gemms.size() == 2);
  CHECK(producer(gemms[0]->input(1))->attr_int("axis", -1) == 0);
  CHECK(dq_constant(gemms[0]->input(1), 1).dims == std::vector<std::int64_t>{24});
  CHECK(producer(gemms[1]->input(1))->attr_int("axis", -1) == 1);
  CHECK(dq_constant(gemms[1]->input(1), 1).dims == std::vector<std::int64_t>{10});
  CHECK(dq_constant(gemms[1]->input(2), 1).dims == std::vector<std::int64_t>{10});
  const logits_pair p = run_both(m, q, 100);
  CAPTURE(relative_error(p));
  CHECK(relative_error(p) < 0.05);
}

TEST_CASE("quantize_qdq quantizes both residual Add inputs and the Relu after the Add", "[quant][qdq]") {
  ir::model m = ir::make_model("residual");
  ir::graph_builder b(m.graph(), 5);
  ir::value* x = b.input("x", ir::data_type::float32, {8, 4, 6, 6});
  ir::value* skip = b.relu(b.conv(x, 8, {}, "stem"));
  ir::value* branch = b.conv(b.relu(b.conv(skip, 8, {}, "c1")), 8, {}, "c2");
  ir::value* sum = b.add(branch, skip);
  ir::value* out = b.relu(sum);
  b.output(b.gemm(b.flatten(b.global_average_pool(b.conv(out, 8, {}, "head"))), 5, "fc"));

  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  maybe_save(q, "residual_qdq.onnx");
  ir::node* add = first_op(q.graph(), "Add");
  REQUIRE(add);
  CHECK(from_dq(add->input(0)));
  CHECK(from_dq(add->input(1)));
  // The Add's output reaches its Relu unquantized; the Relu's output carries the pair.
  REQUIRE(add->output(0)->uses().size() == 1);
  ir::node* relu = add->output(0)->uses()[0].user;
  CHECK(relu->is("Relu"));
  REQUIRE(relu->output(0)->uses().size() == 1);
  CHECK(relu->output(0)->uses()[0].user->is("QuantizeLinear"));
  CHECK(pair_scale(add->input(1)) == quant::symmetric_int8_scale(ranges.at(skip->name())));
  const logits_pair p = run_both(m, q, 100);
  CAPTURE(relative_error(p));
  CHECK(relative_error(p) < 0.05);
}

TEST_CASE("quantize_qdq gives Concat inputs and output one scale", "[quant][qdq]") {
  ir::model m = ir::make_model("concat");
  ir::graph_builder b(m.graph(), 9);
  ir::value* x = b.input("x", ir::data_type::float32, {4, 3, 6, 6});
  ir::value* a = b.relu(b.conv(x, 4, {}, "left"));
  ir::value* c = b.conv(x, 6, {}, "right");  // signed, wider range than the Relu side
  ir::value* cat = b.concat({a, c}, 1);
  b.output(b.conv(cat, 4, {}, "after"));

  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  maybe_save(q, "concat_qdq.onnx");
  ir::node* concat = first_op(q.graph(), "Concat");
  REQUIRE(concat);
  const float s0 = pair_scale(concat->input(0));
  CHECK(s0 == pair_scale(concat->input(1)));
  const quant::tensor_range& ra = ranges.at(a->name());
  const quant::tensor_range& rc = ranges.at(c->name());
  CHECK(s0 == quant::symmetric_int8_scale({std::min(ra.min, rc.min), std::max(ra.max, rc.max)}));
  ir::node* after = first_op(q.graph(), "Conv");
  for (ir::node* n : ops(q.graph(), "Conv")) {
    if (n->name() == "after") after = n;
  }
  CHECK(pair_scale(after->input(0)) == s0);
  const logits_pair p = run_both(m, q, 100);
  CAPTURE(relative_error(p));
  CHECK(relative_error(p) < 0.05);
}

TEST_CASE("quantize_qdq gives MaxPool input and output one scale", "[quant][qdq]") {
  ir::model m = ir::make_model("pool");
  ir::graph_builder b(m.graph(), 13);
  ir::value* x = b.input("x", ir::data_type::float32, {4, 3, 8, 8});
  ir::value* pooled = b.max_pool(b.relu(b.conv(x, 8, {}, "c1")));
  b.output(b.conv(pooled, 4, {}, "c2"));

  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  maybe_save(q, "maxpool_qdq.onnx");
  ir::node* pool = first_op(q.graph(), "MaxPool");
  REQUIRE(pool);
  CHECK(from_dq(pool->input(0)));
  REQUIRE(pool->output(0)->uses().size() == 1);
  ir::node* out_q = pool->output(0)->uses()[0].user;
  REQUIRE(out_q->is("QuantizeLinear"));
  CHECK(out_q->input(1)->initializer()->values<float>().at(0) == pair_scale(pool->input(0)));
  // Quantizing commutes with max: the pool of quantized values needs no second rounding.
  test::require_same_outputs(m, q, 100, 0.05, 0.05);
}

TEST_CASE("quantize_qdq leaves excluded nodes and op types in float", "[quant][qdq]") {
  const ir::model m = small_cnn();
  const quant::range_table ranges = observe_ranges(m);
  quant::qdq_options o;
  std::string conv_name;
  for (ir::node* n : ops(m.graph(), "Conv")) conv_name = n->name();  // the second Conv
  o.exclude_nodes = {conv_name};
  o.exclude_op_types = {"Gemm"};
  auto [q, r] = quantized(m, ranges, o);
  CHECK(r.nodes_quantized == 2);  // first Conv, pool
  for (ir::node* n : q.graph().nodes()) {
    if (n->name() == conv_name || n->is("Gemm")) {
      CAPTURE(n->name());
      for (ir::value* in : n->inputs()) CHECK_FALSE(from_dq(in));
      CHECK(n->input(1)->initializer()->dtype == ir::data_type::float32);
    }
  }
  CHECK(std::count_if(r.skipped.begin(), r.skipped.end(),
                      [](const std::string& s) { return s.find("excluded") != std::string::npos; }) == 2);
}

TEST_CASE("quantize_qdq leaves a model unchanged when a node cannot be quantized", "[quant][qdq]") {
  ir::model m = ir::make_model("declined");
  ir::graph_builder b(m.graph(), 17);
  ir::value* x = b.input("x", ir::data_type::float32, {2, 3, 6, 6});
  quant::range_table ranges;
  SECTION("no range for the activation") {
    b.output(b.conv(x, 4, {}, "conv"));
  }
  SECTION("a weight fed by the caller") {
    ir::value* w = b.input("w", ir::data_type::float32, {4, 3, 3, 3});
    ir::node* conv = test::add_op(m.graph(), "Conv", {x, w}, "conv", {}, one(ir::attribute::make_ints("pads", {1, 1, 1, 1})));
    m.graph().add_output(conv->output(0));
    ranges = observe_ranges(m);
  }
  SECTION("an input already dequantized") {
    ir::value* s = b.constant("s", {}, {0.01f});
    ir::node* qx = test::add_op(m.graph(), "QuantizeLinear", {x, s}, "q");
    ir::node* dqx = test::add_op(m.graph(), "DequantizeLinear", {qx->output(0), s}, "dq");
    dqx->output(0)->set_type(test::float_type({2, 3, 6, 6}));
    b.output(b.conv(dqx->output(0), 4, {}, "conv"));
    ranges = observe_ranges(m);
  }
  SECTION("an Add with a constant operand") {
    ir::value* c = b.constant("c", {1}, {0.5f});
    b.output(b.add(x, c));
    ranges = observe_ranges(m);
  }
  SECTION("a MaxPool that returns Indices") {
    ir::node* pool = test::add_op(m.graph(), "MaxPool", {x}, "pool", {"y", "indices"},
                                  one(ir::attribute::make_ints("kernel_shape", {2, 2})));
    m.graph().add_output(pool->output(0));
    m.graph().add_output(pool->output(1));
    ranges = observe_ranges(m);
  }
  SECTION("a double-typed Concat") {
    ir::value* d = m.graph().add_input("d", ir::value_type{true, ir::data_type::float64, ir::shape{2, 2}});
    ir::node* cat = test::add_op(m.graph(), "Concat", {d, d}, "cat", {}, one(ir::attribute::make_int("axis", 0)));
    m.graph().add_output(cat->output(0));
    ranges["d"] = {-1.0, 1.0};
    ranges["cat_out"] = {-1.0, 1.0};
  }
  const std::string before = test::bytes_of(m);
  const quant::qdq_report r = quant::quantize_qdq(m, ranges);
  CHECK(r.nodes_quantized == 0);
  CHECK(r.skipped.size() == 1);
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("quantize_qdq run twice gives the same model as run once", "[quant][qdq]") {
  const ir::model m = small_cnn();
  const quant::range_table ranges = observe_ranges(m);
  auto [q, r] = quantized(m, ranges);
  const std::string once = test::bytes_of(q);
  const quant::qdq_report second = quant::quantize_qdq(q, ranges);
  CHECK(second.nodes_quantized == 0);
  CHECK(test::bytes_of(q) == once);
}

TEST_CASE("quantize_qdq converts opsets 11 and 12 to 13 for per-channel weights, per-tensor where it cannot",
          "[quant][qdq]") {
  SECTION("ops unchanged from 11 to 13: converted") {
    const ir::model m = small_cnn(11);
    auto [q, r] = quantized(m, observe_ranges(m));
    CHECK(r.opset_raised);
    CHECK(r.opset == 13);
    CHECK(q.opset("") == 13);
    CHECK(producer(first_op(q.graph(), "Conv")->input(1))->attr_int("axis", -1) == 0);
  }
  SECTION("a Softmax, whose axis meaning changed at 13: converted with it") {
    ir::model m = small_cnn(12);
    ir::value* logits = m.graph().outputs()[0];
    ir::node* sm = test::add_op(m.graph(), "Softmax", {logits}, "softmax", {"probs"});
    sm->output(0)->set_type(logits->type());
    m.graph().set_output(0, sm->output(0));
    auto [q, r] = quantized(m, observe_ranges(m));
    CHECK(r.opset_raised);
    CHECK(first_op(q.graph(), "Softmax")->attr_int("axis", 0) == -1);  // the last of the logits' two axes
    CHECK(producer(first_op(q.graph(), "Conv")->input(1))->attr_int("axis", -1) == 0);
  }
  SECTION("a Resize mode opset 13 dropped: per-tensor instead") {
    ir::model m = small_cnn(12);
    ir::value* logits = m.graph().outputs()[0];
    ir::value* roi = m.graph().add_initializer("roi", ir::tensor::from_values<float>("roi", {0}, std::vector<float>{}));
    ir::value* scales = m.graph().add_initializer("scales", ir::tensor::from_values<float>("scales", {2}, std::vector<float>{1, 1}));
    ir::node* resize = test::add_op(m.graph(), "Resize", {logits, roi, scales}, "resize", {"resized"});
    resize->set_attribute(ir::attribute::make_string("coordinate_transformation_mode", "tf_half_pixel_for_nn"));
    resize->output(0)->set_type(logits->type());
    m.graph().set_output(0, resize->output(0));
    auto [q, r] = quantized(m, observe_ranges(m));
    CHECK_FALSE(r.opset_raised);
    CHECK(r.per_tensor_fallback);
    CHECK(q.opset("") == 12);
    for (ir::node* n : ops(q.graph(), "DequantizeLinear")) CHECK_FALSE(n->find_attribute("axis"));
    const logits_pair p = run_both(m, q, 100);
    CHECK(relative_error(p) < 0.05);
  }
}

TEST_CASE("quantize_qdq refuses opsets without QuantizeLinear", "[quant][qdq]") {
  ir::model m = small_cnn(9);
  const auto e = test::error_from([&] { (void)quant::quantize_qdq(m, observe_ranges(m)); });
  REQUIRE(e);
  CHECK(e->code() == errc::unsupported);
}

TEST_CASE("quantize_qdq refuses weight bits outside 2..8 and leaves the model as it was", "[quant][qdq]") {
  ir::model m = small_cnn();
  const std::size_t nodes = m.graph().node_list().size();
  const auto e = test::error_from([&] { (void)quant::quantize_qdq(m, observe_ranges(m), quant::qdq_options{.weight_bits = 9}); });
  REQUIRE(e);
  CHECK(e->code() == errc::invalid_argument);
  CHECK(m.graph().node_list().size() == nodes);
}

TEST_CASE("has_attention tells an attention model from a CNN and an MLP", "[quant][qdq]") {
  ir::model attention = ir::make_model("attention");
  {
    ir::graph_builder b(attention.graph(), 1);
    ir::value* q = b.input("q", ir::data_type::float32, ir::shape{2, 4, 8});
    ir::value* k = b.input("k", ir::data_type::float32, ir::shape{2, 8, 4});
    ir::value* scores = b.mul(b.matmul(q, k), b.constant("scale", {}, {0.35f}));
    std::vector<ir::attribute> axis;
    axis.push_back(ir::attribute::make_int("axis", -1));
    b.output(b.op("Softmax", {scores}, std::move(axis)));
  }
  CHECK(quant::has_attention(attention));
  ir::model mlp = ir::make_model("mlp");
  {
    ir::graph_builder b(mlp.graph(), 2);
    ir::value* x = b.input("x", ir::data_type::float32, ir::shape{2, 8});
    std::vector<ir::attribute> axis;
    axis.push_back(ir::attribute::make_int("axis", -1));
    b.output(b.op("Softmax", {b.matmul(x, b.random_constant("W", {8, 4}, 0.5f))}, std::move(axis)));  // a classifier head
  }
  CHECK_FALSE(quant::has_attention(mlp));
  CHECK_FALSE(quant::has_attention(test::small_cnn()));
  CHECK(quant::transformer_op_types() == std::vector<std::string>{"MatMul", "Gemm"});
}
