#pragma once
// Small Conv / ConvTranspose models of any spatial rank, group and element type, for the
// tests of the passes that fold per-channel arithmetic into conv weights. graph_builder only
// makes 2-D float convs, so these build the nodes directly.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fusion_test_util.hpp"
#include "inferopt/core/float16.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "pass_test_util.hpp"
#include "support/builtin_pipeline.hpp"

namespace inferopt::test {

/// A tensor of `dims` holding `values` stored as `type` (float32, float64 or float16).
inline ir::tensor floating_tensor(ir::data_type type, std::vector<std::int64_t> dims, const std::vector<double>& values) {
  if (type == ir::data_type::float64) return ir::tensor::from_values<double>("", std::move(dims), values);
  if (type == ir::data_type::float16) {
    std::vector<std::uint16_t> half;
    for (double x : values) half.push_back(inferopt::float_to_half(static_cast<float>(x)));
    ir::tensor t = ir::tensor::from_values<std::uint16_t>("", std::move(dims), half);
    t.dtype = ir::data_type::float16;
    return t;
  }
  std::vector<float> single(values.begin(), values.end());
  return ir::tensor::from_values<float>("", std::move(dims), single);
}

/// Adds an initializer of uniform random values in [lo, hi).
inline ir::value* random_initializer(ir::graph& g, const std::string& name, ir::data_type type,
                                     std::vector<std::int64_t> dims, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<std::size_t>(ir::tensor::element_count(dims)));
  for (double& x : values) x = dist(rng);
  const std::string unique = g.unique_name(name);
  return g.add_initializer(unique, floating_tensor(type, std::move(dims), values));
}

/// Adds an initializer holding exactly `values`.
inline ir::value* fixed_initializer(ir::graph& g, const std::string& name, ir::data_type type,
                                    std::vector<std::int64_t> dims, const std::vector<double>& values) {
  const std::string unique = g.unique_name(name);
  return g.add_initializer(unique, floating_tensor(type, std::move(dims), values));
}

struct conv_shape {
  int spatial = 2;             ///< 1, 2 or 3 spatial dims
  std::int64_t in_channels = 4;
  std::int64_t out_channels = 6;
  std::int64_t group = 1;
  bool bias = true;
  bool transpose = false;      ///< ConvTranspose (stride 2) instead of Conv
  ir::data_type type = ir::data_type::float32;
  std::int64_t opset = 17;
  std::int64_t size = 5;       ///< every spatial dim of the input
};

struct conv_model {
  ir::model m;
  ir::value* x = nullptr;
  ir::node* conv = nullptr;
  ir::value* y = nullptr;      ///< the conv's output
  std::mt19937 rng{11};
};

/// `x -> Conv/ConvTranspose -> y` (y not yet a graph output), kernel 3 in every spatial dim.
inline conv_model make_conv_model(const conv_shape& s) {
  conv_model c;
  c.m = ir::make_model("conv", s.opset);
  ir::graph& g = c.m.graph();
  std::vector<std::int64_t> x_dims{1, s.in_channels};
  for (int d = 0; d < s.spatial; ++d) x_dims.push_back(s.size);
  c.x = g.add_input("x", ir::value_type{true, s.type, ir::shape(x_dims.begin(), x_dims.end())});

  std::vector<std::int64_t> w_dims = s.transpose ? std::vector<std::int64_t>{s.in_channels, s.out_channels / s.group}
                                                 : std::vector<std::int64_t>{s.out_channels, s.in_channels / s.group};
  for (int d = 0; d < s.spatial; ++d) w_dims.push_back(3);
  std::vector<ir::value*> inputs{c.x, random_initializer(g, "w", s.type, w_dims, c.rng, -0.5, 0.5)};
  if (s.bias) inputs.push_back(random_initializer(g, "b", s.type, {s.out_channels}, c.rng, -0.5, 0.5));

  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_ints("kernel_shape", std::vector<std::int64_t>(s.spatial, 3)));
  attrs.push_back(ir::attribute::make_ints("pads", std::vector<std::int64_t>(2 * s.spatial, 1)));
  attrs.push_back(ir::attribute::make_int("group", s.group));
  if (s.transpose) attrs.push_back(ir::attribute::make_ints("strides", std::vector<std::int64_t>(s.spatial, 2)));
  c.conv = add_op(g, s.transpose ? "ConvTranspose" : "Conv", inputs, "conv", {"y"}, std::move(attrs));
  c.y = c.conv->output(0);
  std::vector<std::int64_t> y_dims{1, s.out_channels};
  const std::int64_t out_size = s.transpose ? 2 * (s.size - 1) + 3 - 2 : s.size;
  for (int d = 0; d < s.spatial; ++d) y_dims.push_back(out_size);
  c.y->set_type(ir::value_type{true, s.type, ir::shape(y_dims.begin(), y_dims.end())});
  return c;
}

}  // namespace inferopt::test
