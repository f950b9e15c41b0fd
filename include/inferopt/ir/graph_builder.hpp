#pragma once
/// Builds graphs in a few lines, for tests, examples and generated models. Weights are
/// seeded random values (He-scaled for Conv/Gemm/MatMul; positive BN scale and variance) so
/// numeric checks on built graphs are meaningful. Output shapes are tracked for the ops the
/// builder makes, so a layer can read its input's channel count.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

struct conv_options {
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t pad = -1;  ///< -1: "same" padding for odd kernels
  std::int64_t group = 1;
  std::int64_t dilation = 1;
  bool bias = true;
};

struct pool_options {
  std::int64_t kernel = 2;
  std::int64_t stride = 2;
  std::int64_t pad = 0;
};

class graph_builder {
 public:
  /// Builds into `g`; names are made unique with `g.unique_name`.
  explicit graph_builder(graph& g, std::uint32_t seed = 0) : g_(g), rng_(seed) {}

  value* input(const std::string& name, data_type type, shape dims);
  void output(value* v) { g_.add_output(v); }

  /// A constant from values; `values.size()` must match `dims`.
  value* constant(const std::string& name, std::vector<std::int64_t> dims, const std::vector<float>& values);
  value* constant_i64(const std::string& name, std::vector<std::int64_t> dims, const std::vector<std::int64_t>& values);
  /// A constant of N(0, stddev^2) values.
  value* random_constant(const std::string& name, std::vector<std::int64_t> dims, float stddev);

  /// A node of any type with one output; the output's type is left unknown.
  value* op(const std::string& op_type, std::vector<value*> inputs, std::vector<attribute> attributes = {},
            const std::string& name = {});

  value* conv(value* x, std::int64_t out_channels, conv_options o = {}, const std::string& name = {});
  value* batch_norm(value* x, float epsilon = 1e-5f, const std::string& name = {});
  value* relu(value* x) { return unary("Relu", x); }
  value* sigmoid(value* x) { return unary("Sigmoid", x); }
  value* tanh(value* x) { return unary("Tanh", x); }
  value* leaky_relu(value* x, float alpha = 0.01f);
  value* clip(value* x, float lo, float hi);  ///< opset >= 11 form: min/max as inputs
  value* identity(value* x) { return unary("Identity", x); }
  value* dropout(value* x, float ratio = 0.5f);
  value* add(value* a, value* b) { return binary("Add", a, b); }
  value* mul(value* a, value* b) { return binary("Mul", a, b); }
  value* matmul(value* a, value* b);
  /// Y = X W^T + b with W of shape [out_features, in_features] (transB = 1).
  value* gemm(value* x, std::int64_t out_features, const std::string& name = {});
  /// A fully connected layer as MatMul + Add (the pattern MatMul+Add fusion looks for).
  value* dense(value* x, std::int64_t out_features);
  value* max_pool(value* x, pool_options o = {});
  value* average_pool(value* x, pool_options o = {});
  value* global_average_pool(value* x);
  value* flatten(value* x, std::int64_t axis = 1);
  value* reshape(value* x, const std::vector<std::int64_t>& dims);
  value* concat(const std::vector<value*>& xs, std::int64_t axis);

  [[nodiscard]] graph& target() noexcept { return g_; }

 private:
  value* unary(const std::string& op_type, value* x);
  value* binary(const std::string& op_type, value* a, value* b);
  value* pool(const std::string& op_type, value* x, pool_options o);
  value* emit(node_spec spec, std::optional<value_type> out_type);
  std::string fresh(const std::string& base) { return g_.unique_name(base); }
  static std::vector<std::int64_t> static_dims(const value* v);

  graph& g_;
  std::mt19937 rng_;
  std::size_t layer_ = 0;
};

/// A model with the default opset (17) around an empty graph.
[[nodiscard]] model make_model(std::string graph_name, std::int64_t opset = 17);

}  // namespace inferopt::ir
