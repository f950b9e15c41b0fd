#pragma once
// A seeded generator of small random models for differential testing of passes: chains of
// Conv/ConvTranspose/BN/activations/Add/Mul/Concat/Pad/Transpose/Reshape over NCHW tensors,
// then MatMul/Gemm/BN/activations over matrices. Values get several consumers, graph outputs
// sit in the middle of chains, convs vary groups, strides, dilations and bias, and the opset
// varies between forms of the same op (Clip and Pad attributes before 11, inputs after).
// Same seed, same model.

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"

namespace inferopt::test {

class random_graph_generator {
 public:
  explicit random_graph_generator(std::uint64_t seed) : rng_(static_cast<std::uint32_t>(seed)), seed_(seed) {}

  /// Builds the model. Its inputs are one NCHW float tensor; 1 to 4 outputs.
  ir::model make() {
    static constexpr std::int64_t opsets[] = {10, 11, 13, 17};
    opset_ = opsets[pick(4)];
    ir::model m = ir::make_model("random_" + std::to_string(seed_), opset_);
    ir::graph& g = m.graph();
    ir::graph_builder b(g, static_cast<std::uint32_t>(seed_ * 2654435761u));
    b_ = &b;
    images_.clear();
    matrices_.clear();
    outputs_ = 0;

    const std::int64_t n = 1 + pick(2), c = 1 + pick(6), h = 3 + pick(8), w = 3 + pick(8);
    images_.push_back({b.input("x", ir::data_type::float32, {n, c, h, w}), n, c, h, w});
    const int image_steps = 2 + static_cast<int>(pick(9));
    for (int i = 0; i < image_steps; ++i) image_step();
    if (chance(0.6)) {
      to_matrix();
      const int matrix_steps = 1 + static_cast<int>(pick(5));
      for (int i = 0; i < matrix_steps; ++i) matrix_step();
      output(matrices_.back().v);
    } else {
      output(images_.back().v);
    }
    // Branches nothing reads become graph outputs, so no generated node is dead code.
    for (ir::node* n : g.node_list()) {
      for (ir::value* v : n->outputs()) {
        if (v && !v->has_uses() && !v->is_graph_output()) output(v);
      }
    }
    // Half the models keep value types on intermediates (as exported models often do), half
    // carry none, so passes meet both.
    if (chance(0.5)) {
      for (ir::value* v : g.values()) {
        if (!v->is_graph_input() && !v->is_graph_output() && !v->is_initializer()) g.clear_value_info(v);
      }
    }
    b_ = nullptr;
    return m;
  }

  [[nodiscard]] std::int64_t opset() const noexcept { return opset_; }

 private:
  struct image {
    ir::value* v;
    std::int64_t n, c, h, w;
  };
  struct matrix {
    ir::value* v;
    std::int64_t rows, cols;
  };

  std::int64_t pick(std::int64_t bound) { return std::uniform_int_distribution<std::int64_t>(0, bound - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng_); }

  /// Recent values are likelier inputs, older ones give values several consumers.
  template <class T>
  T& choose(std::vector<T>& pool) {
    return chance(0.7) ? pool.back() : pool[static_cast<std::size_t>(pick(static_cast<std::int64_t>(pool.size())))];
  }

  /// graph_builder tracks shapes only for the layers it makes; ops built with `op` get theirs here.
  static ir::value* shaped(ir::value* v, const std::vector<std::int64_t>& dims) {
    ir::shape sh(dims.begin(), dims.end());
    v->set_type(ir::value_type{true, ir::data_type::float32, std::move(sh)});
    return v;
  }

  void output(ir::value* v) {
    for (ir::value* o : b_->target().outputs()) {
      if (o == v) return;
    }
    if (v->is_graph_input()) return;
    b_->output(v);
    ++outputs_;
  }

  std::vector<float> randoms(std::int64_t count, float lo, float hi) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

  void image_step() {
    const image x = choose(images_);
    image y = x;
    switch (pick(13)) {
      case 0:
      case 1: y = conv(x); break;
      case 2: y = conv_transpose(x); break;
      case 3: y.v = b_->batch_norm(x.v, 1e-3f); break;
      case 4:
      case 5: y.v = activation(x.v); break;
      case 6: y.v = per_channel(x); break;
      case 7: y = residual_or_concat(x); break;
      case 8: y = pad_then_window(x); break;
      case 9: y.v = transpose_round_trip(x); break;
      case 10: y.v = reshape_round_trip(x); break;
      case 11: y = dense_last_axis(x); break;
      default: y.v = b_->identity(x.v); break;
    }
    shaped(y.v, {y.n, y.c, y.h, y.w});
    images_.push_back(y);
    if (chance(0.15)) output(y.v);  // a graph output in the middle of a chain
  }

  image conv(const image& x) {
    ir::conv_options o;
    o.kernel = chance(0.5) ? 3 : 1;
    o.stride = chance(0.25) ? 2 : 1;
    o.dilation = o.kernel == 3 && chance(0.2) ? 2 : 1;
    o.pad = (o.kernel / 2) * o.dilation;
    o.bias = chance(0.6);
    std::int64_t out = 1 + pick(8);
    if (chance(0.3)) {  // grouped or depthwise
      o.group = x.c;
      out = x.c * (1 + pick(2));
    } else if (x.c % 2 == 0 && chance(0.3)) {
      o.group = 2;
      out = 2 * (1 + pick(4));
    }
    const std::int64_t reach = o.dilation * (o.kernel - 1) + 1;
    const std::int64_t oh = (x.h + 2 * o.pad - reach) / o.stride + 1, ow = (x.w + 2 * o.pad - reach) / o.stride + 1;
    return {b_->conv(x.v, out, o), x.n, out, oh, ow};
  }

  image conv_transpose(const image& x) {
    // Kernel 2, stride 2, optional groups: the spatial size doubles.
    const std::int64_t group = x.c % 2 == 0 && chance(0.4) ? 2 : 1;
    const std::int64_t per_group = 1 + pick(3);
    ir::value* w = b_->random_constant("deconv_w", {x.c, per_group, 2, 2}, 0.5f);
    std::vector<ir::value*> inputs{x.v, w};
    if (chance(0.5)) inputs.push_back(b_->constant("deconv_b", {group * per_group}, randoms(group * per_group, -0.5f, 0.5f)));
    ir::value* y = b_->op("ConvTranspose", inputs,
                          ir::attribute_list(ir::attribute::make_ints("strides", {2, 2}), ir::attribute::make_ints("kernel_shape", {2, 2}),
                           ir::attribute::make_int("group", group)));
    return {y, x.n, group * per_group, 2 * x.h, 2 * x.w};
  }

  ir::value* activation(ir::value* x) {
    switch (pick(opset_ >= 14 ? 8 : 7)) {
      case 0: return b_->relu(x);
      case 1: return b_->leaky_relu(x, uniform(0.01f, 0.3f));
      case 2: return clip(x);
      case 3: return b_->sigmoid(x);
      case 4: return b_->tanh(x);
      case 5:
        return b_->op("HardSigmoid", {x},
                      ir::attribute_list(ir::attribute::make_float("alpha", uniform(0.1f, 0.3f)), ir::attribute::make_float("beta", 0.5f)));
      case 6: return b_->relu(x);
      default: return b_->op("HardSwish", {x});
    }
  }

  ir::value* clip(ir::value* x) {
    const float lo = chance(0.5) ? 0.0f : uniform(-1.0f, 0.0f), hi = uniform(0.5f, 6.0f);
    if (opset_ >= 11) return b_->clip(x, lo, hi);
    return b_->op("Clip", {x}, ir::attribute_list(ir::attribute::make_float("min", lo), ir::attribute::make_float("max", hi)));
  }

  /// Mul or Add by a per-channel or scalar constant, the constant on either side.
  ir::value* per_channel(const image& x) {
    const bool scalar = chance(0.2);
    const std::vector<std::int64_t> dims = scalar ? std::vector<std::int64_t>{1}
                                           : chance(0.5) ? std::vector<std::int64_t>{x.c, 1, 1}
                                                         : std::vector<std::int64_t>{1, x.c, 1, 1};
    const std::int64_t count = scalar ? 1 : x.c;
    const bool multiply = chance(0.5);
    ir::value* k = b_->constant(multiply ? "scale" : "shift", dims,
                                multiply ? randoms(count, 0.5f, 1.5f) : randoms(count, -1.0f, 1.0f));
    const bool constant_first = chance(0.3);
    ir::value* a = constant_first ? k : x.v;
    ir::value* c = constant_first ? x.v : k;
    return multiply ? b_->mul(a, c) : b_->add(a, c);
  }

  /// A residual Add of two same-shaped images when one exists, else a channel Concat.
  image residual_or_concat(const image& x) {
    std::vector<const image*> same;
    for (const image& o : images_) {
      if (o.v != x.v && o.n == x.n && o.h == x.h && o.w == x.w) same.push_back(&o);
    }
    if (same.empty()) return {b_->concat({x.v, b_->relu(x.v)}, 1), x.n, 2 * x.c, x.h, x.w};
    const image& other = *same[static_cast<std::size_t>(pick(static_cast<std::int64_t>(same.size())))];
    if (other.c == x.c && chance(0.6)) {
      ir::value* sum = chance(0.5) ? b_->add(x.v, other.v) : b_->add(other.v, x.v);
      return {chance(0.5) ? b_->relu(sum) : sum, x.n, x.c, x.h, x.w};
    }
    return {b_->concat({x.v, other.v}, 1), x.n, x.c + other.c, x.h, x.w};
  }

  /// Zero Pad on the spatial axes, then a Conv or AveragePool (the Pad-into-window fusion).
  image pad_then_window(const image& x) {
    const std::int64_t t = pick(2), l = pick(2), bt = pick(2), r = pick(2);
    const std::vector<std::int64_t> pads{0, 0, t, l, 0, 0, bt, r};
    ir::value* padded = opset_ >= 11
                            ? b_->op("Pad", {x.v, b_->constant_i64("pads", {8}, pads)})
                            : b_->op("Pad", {x.v}, ir::attribute_list(ir::attribute::make_ints("pads", pads)));
    const image p{shaped(padded, {x.n, x.c, x.h + t + bt, x.w + l + r}), x.n, x.c, x.h + t + bt, x.w + l + r};
    if (chance(0.5)) return conv(p);
    ir::value* pooled = b_->op("AveragePool", {padded},
                               ir::attribute_list(ir::attribute::make_ints("kernel_shape", {2, 2}), ir::attribute::make_ints("strides", {1, 1}),
                                ir::attribute::make_int("count_include_pad", chance(0.5) ? 1 : 0)));
    return {pooled, p.n, p.c, p.h - 1, p.w - 1};
  }

  /// A dense layer over the last axis of an image: the batched MatMul + Add fusion.
  image dense_last_axis(const image& x) {
    const std::int64_t out = 1 + pick(8);
    ir::value* y = shaped(b_->matmul(x.v, b_->random_constant("w", {x.w, out}, 0.5f)), {x.n, x.c, x.h, out});
    if (chance(0.7)) y = b_->add(y, b_->constant("bias", {out}, randoms(out, -0.5f, 0.5f)));
    return {y, x.n, x.c, x.h, out};
  }

  ir::value* transpose(ir::value* x, const std::vector<std::int64_t>& perm) {
    return b_->op("Transpose", {x}, ir::attribute_list(ir::attribute::make_ints("perm", perm)));
  }

  /// NCHW -> a random permutation -> (maybe an elementwise op) -> back to NCHW.
  ir::value* transpose_round_trip(const image& x) {
    std::vector<std::int64_t> perm{0, 1, 2, 3};
    std::shuffle(perm.begin(), perm.end(), rng_);
    std::vector<std::int64_t> inverse(4);
    for (std::int64_t i = 0; i < 4; ++i) inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
    ir::value* t = transpose(x.v, perm);
    if (chance(0.4)) t = activation(t);
    return transpose(t, inverse);
  }

  /// NCHW -> [N, C, H*W] (or [N, C*H*W]) -> back, the second shape sometimes with -1 or 0.
  ir::value* reshape_round_trip(const image& x) {
    ir::value* flat = chance(0.5) ? b_->reshape(x.v, {x.n, x.c, x.h * x.w}) : b_->reshape(x.v, {x.n, -1});
    if (chance(0.3)) flat = b_->relu(flat);
    const std::vector<std::int64_t> back =
        chance(0.5) ? std::vector<std::int64_t>{x.n, x.c, x.h, x.w} : std::vector<std::int64_t>{x.n, x.c, x.h, -1};
    return b_->reshape(flat, back);
  }

  void to_matrix() {
    const image x = images_.back();
    if (chance(0.5)) {
      matrices_.push_back({b_->flatten(b_->global_average_pool(x.v)), x.n, x.c});
    } else {
      matrices_.push_back({b_->flatten(x.v), x.n, x.c * x.h * x.w});
    }
    shaped(matrices_.back().v, {matrices_.back().rows, matrices_.back().cols});
  }

  void matrix_step() {
    const matrix x = choose(matrices_);
    matrix y = x;
    switch (pick(9)) {
      case 0: {
        const std::int64_t out = 1 + pick(12);
        y = {b_->gemm(x.v, out), x.rows, out};
        break;
      }
      case 1:
      case 2: {  // MatMul with a constant weight, often followed by a bias Add
        const std::int64_t out = 1 + pick(12);
        y = {b_->matmul(x.v, b_->random_constant("w", {x.cols, out}, 0.5f)), x.rows, out};
        if (chance(0.7)) y.v = b_->add(y.v, b_->constant("bias", {out}, randoms(out, -0.5f, 0.5f)));
        break;
      }
      case 3: y.v = b_->batch_norm(x.v, 1e-3f); break;
      case 4: y.v = activation(x.v); break;
      case 5: {  // Transpose feeding a MatMul: the transpose-into-Gemm fusion
        const std::int64_t out = 1 + pick(8);
        ir::value* w = b_->random_constant("wt", {out, x.cols}, 0.5f);
        y = {b_->matmul(x.v, shaped(transpose(w, {1, 0}), {x.cols, out})), x.rows, out};
        break;
      }
      case 6: {  // two products summed: MatMul + Add of a computed value (MatMul+Add into Gemm)
        const std::int64_t out = 1 + pick(8);
        ir::value* p = shaped(b_->matmul(x.v, b_->random_constant("w", {x.cols, out}, 0.5f)), {x.rows, out});
        ir::value* q = shaped(b_->matmul(x.v, b_->random_constant("w", {x.cols, out}, 0.5f)), {x.rows, out});
        y = {chance(0.5) ? b_->add(p, q) : b_->add(q, p), x.rows, out};
        break;
      }
      case 7: {  // a Gemm whose result is transposed (Transpose into Gemm)
        const std::int64_t out = 1 + pick(8);
        y = {transpose(b_->gemm(x.v, out), {1, 0}), out, x.rows};
        break;
      }
      default: {
        const bool multiply = chance(0.5);
        ir::value* k = b_->constant("col", {x.cols}, multiply ? randoms(x.cols, 0.5f, 1.5f) : randoms(x.cols, -1.f, 1.f));
        y.v = multiply ? b_->mul(x.v, k) : b_->add(x.v, k);
        break;
      }
    }
    shaped(y.v, {y.rows, y.cols});
    matrices_.push_back(y);
    if (chance(0.15)) output(y.v);
  }

  std::mt19937 rng_;
  std::uint64_t seed_;
  std::int64_t opset_ = 17;
  ir::graph_builder* b_ = nullptr;
  std::vector<image> images_;
  std::vector<matrix> matrices_;
  int outputs_ = 0;
};

}  // namespace inferopt::test
