#include "inferopt/ir/graph_builder.hpp"

#include <algorithm>
#include <cmath>

namespace inferopt::ir {
namespace {

value_type float_tensor(std::vector<std::int64_t> dims) {
  return value_type{true, data_type::float32, shape(dims.begin(), dims.end())};
}

/// numpy broadcasting of two static shapes; empty optional when either is unknown.
std::optional<std::vector<std::int64_t>> broadcast(const std::vector<std::int64_t>& a,
                                                   const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> out(std::max(a.size(), b.size()), 1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::int64_t da = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    std::int64_t db = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) throw error(errc::invalid_argument, "graph_builder: shapes do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> graph_builder::static_dims(const value* v) {
  expects(v && v->type() && v->type()->has_static_shape(), "graph_builder: input needs a static shape");
  std::vector<std::int64_t> out;
  for (const dim& d : *v->type()->dims) out.push_back(d.value());
  return out;
}

value* graph_builder::input(const std::string& name, data_type type, shape dims) {
  return g_.add_input(name, value_type{true, type, std::move(dims)});
}

value* graph_builder::constant(const std::string& name, std::vector<std::int64_t> dims, const std::vector<float>& values) {
  std::string n = fresh(name);
  return g_.add_initializer(n, tensor::from_values<float>(n, std::move(dims), values));
}

value* graph_builder::constant_i64(const std::string& name, std::vector<std::int64_t> dims,
                                   const std::vector<std::int64_t>& values) {
  std::string n = fresh(name);
  return g_.add_initializer(n, tensor::from_values<std::int64_t>(n, std::move(dims), values));
}

value* graph_builder::random_constant(const std::string& name, std::vector<std::int64_t> dims, float stddev) {
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> values(static_cast<std::size_t>(tensor::element_count(dims)));
  for (float& x : values) x = normal(rng_);
  return constant(name, std::move(dims), values);
}

value* graph_builder::emit(node_spec spec, std::optional<value_type> out_type) {
  if (spec.name.empty()) spec.name = fresh(spec.op_type + "_" + std::to_string(layer_++));
  if (spec.outputs.empty()) spec.outputs.push_back(fresh(spec.name + "_out"));
  node* n = g_.add_node(std::move(spec));
  n->output(0)->set_type(std::move(out_type));
  return n->output(0);
}

value* graph_builder::op(const std::string& op_type, std::vector<value*> inputs, std::vector<attribute> attributes,
                         const std::string& name) {
  return emit(node_spec{op_type, std::move(inputs), {}, std::move(attributes), name, {}}, std::nullopt);
}

value* graph_builder::unary(const std::string& op_type, value* x) {
  return emit(node_spec{op_type, {x}, {}, {}, {}, {}}, x->type());
}

value* graph_builder::binary(const std::string& op_type, value* a, value* b) {
  std::optional<value_type> t;
  if (a->type() && b->type() && a->type()->has_static_shape() && b->type()->has_static_shape()) {
    auto dims = *broadcast(static_dims(a), static_dims(b));
    t = value_type{true, a->elem_type(), shape(dims.begin(), dims.end())};
  }
  return emit(node_spec{op_type, {a, b}, {}, {}, {}, {}}, t);
}

value* graph_builder::leaky_relu(value* x, float alpha) {
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_float("alpha", alpha));
  return emit(node_spec{"LeakyRelu", {x}, {}, std::move(attrs), {}, {}}, x->type());
}

value* graph_builder::clip(value* x, float lo, float hi) {
  value* min = constant("clip_min", {}, {lo});
  value* max = constant("clip_max", {}, {hi});
  return emit(node_spec{"Clip", {x, min, max}, {}, {}, {}, {}}, x->type());
}

value* graph_builder::dropout(value* x, float ratio) {
  value* r = constant("dropout_ratio", {}, {ratio});
  return emit(node_spec{"Dropout", {x, r}, {}, {}, {}, {}}, x->type());
}

value* graph_builder::conv(value* x, std::int64_t out_channels, conv_options o, const std::string& name) {
  auto in = static_dims(x);
  expects(in.size() == 4, "graph_builder::conv: input must be NCHW");
  expects(in[1] % o.group == 0 && out_channels % o.group == 0, "graph_builder::conv: channels not divisible by group");
  const std::int64_t pad = o.pad >= 0 ? o.pad : o.dilation * (o.kernel - 1) / 2;
  const std::int64_t fan_in = in[1] / o.group * o.kernel * o.kernel;
  value* w = random_constant("conv_w", {out_channels, in[1] / o.group, o.kernel, o.kernel},
                             std::sqrt(2.0f / static_cast<float>(fan_in)));
  std::vector<value*> inputs{x, w};
  if (o.bias) inputs.push_back(random_constant("conv_b", {out_channels}, 0.1f));
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_ints("kernel_shape", {o.kernel, o.kernel}));
  attrs.push_back(attribute::make_ints("strides", {o.stride, o.stride}));
  attrs.push_back(attribute::make_ints("pads", {pad, pad, pad, pad}));
  attrs.push_back(attribute::make_ints("dilations", {o.dilation, o.dilation}));
  attrs.push_back(attribute::make_int("group", o.group));
  auto out_size = [&](std::int64_t n) { return (n + 2 * pad - o.dilation * (o.kernel - 1) - 1) / o.stride + 1; };
  return emit(node_spec{"Conv", std::move(inputs), {}, std::move(attrs), name, {}},
              float_tensor({in[0], out_channels, out_size(in[2]), out_size(in[3])}));
}

value* graph_builder::batch_norm(value* x, float epsilon, const std::string& name) {
  auto in = static_dims(x);
  const std::int64_t c = in.at(1);
  std::uniform_real_distribution<float> scale_dist(0.5f, 1.5f);
  std::uniform_real_distribution<float> var_dist(0.5f, 2.0f);
  std::normal_distribution<float> shift_dist(0.0f, 0.1f);
  std::vector<float> scale(c), bias(c), mean(c), var(c);
  for (std::int64_t k = 0; k < c; ++k) {
    scale[k] = scale_dist(rng_);
    bias[k] = shift_dist(rng_);
    mean[k] = shift_dist(rng_);
    var[k] = var_dist(rng_);
  }
  std::vector<value*> inputs{x, constant("bn_scale", {c}, scale), constant("bn_bias", {c}, bias),
                             constant("bn_mean", {c}, mean), constant("bn_var", {c}, var)};
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_float("epsilon", epsilon));
  return emit(node_spec{"BatchNormalization", std::move(inputs), {}, std::move(attrs), name, {}}, x->type());
}

value* graph_builder::matmul(value* a, value* b) {
  std::optional<value_type> t;
  if (a->type() && b->type() && a->type()->has_static_shape() && b->type()->has_static_shape()) {
    auto da = static_dims(a);
    auto db = static_dims(b);
    if (da.size() >= 2 && db.size() == 2) {
      da.back() = db.back();
      t = float_tensor(da);
    }
  }
  return emit(node_spec{"MatMul", {a, b}, {}, {}, {}, {}}, t);
}

value* graph_builder::gemm(value* x, std::int64_t out_features, const std::string& name) {
  auto in = static_dims(x);
  expects(in.size() == 2, "graph_builder::gemm: input must be 2-D");
  value* w = random_constant("fc_w", {out_features, in[1]}, std::sqrt(2.0f / static_cast<float>(in[1])));
  value* b = random_constant("fc_b", {out_features}, 0.1f);
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_int("transB", 1));
  return emit(node_spec{"Gemm", {x, w, b}, {}, std::move(attrs), name, {}}, float_tensor({in[0], out_features}));
}

value* graph_builder::dense(value* x, std::int64_t out_features) {
  auto in = static_dims(x);
  value* w = random_constant("dense_w", {in.back(), out_features}, std::sqrt(2.0f / static_cast<float>(in.back())));
  value* b = random_constant("dense_b", {out_features}, 0.1f);
  return add(matmul(x, w), b);
}

value* graph_builder::pool(const std::string& op_type, value* x, pool_options o) {
  auto in = static_dims(x);
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_ints("kernel_shape", {o.kernel, o.kernel}));
  attrs.push_back(attribute::make_ints("strides", {o.stride, o.stride}));
  attrs.push_back(attribute::make_ints("pads", {o.pad, o.pad, o.pad, o.pad}));
  auto out_size = [&](std::int64_t n) { return (n + 2 * o.pad - o.kernel) / o.stride + 1; };
  return emit(node_spec{op_type, {x}, {}, std::move(attrs), {}, {}},
              float_tensor({in[0], in[1], out_size(in[2]), out_size(in[3])}));
}

value* graph_builder::max_pool(value* x, pool_options o) { return pool("MaxPool", x, o); }
value* graph_builder::average_pool(value* x, pool_options o) { return pool("AveragePool", x, o); }

value* graph_builder::global_average_pool(value* x) {
  auto in = static_dims(x);
  return emit(node_spec{"GlobalAveragePool", {x}, {}, {}, {}, {}}, float_tensor({in[0], in[1], 1, 1}));
}

value* graph_builder::flatten(value* x, std::int64_t axis) {
  auto in = static_dims(x);
  const std::int64_t rank = static_cast<std::int64_t>(in.size());
  expects(axis >= -rank && axis <= rank, "graph_builder::flatten: axis out of range");
  const std::int64_t split = axis < 0 ? axis + rank : axis;  // ONNX counts a negative axis from the back
  std::int64_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < in.size(); ++k) (static_cast<std::int64_t>(k) < split ? outer : inner) *= in[k];
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_int("axis", axis));
  return emit(node_spec{"Flatten", {x}, {}, std::move(attrs), {}, {}}, float_tensor({outer, inner}));
}

value* graph_builder::reshape(value* x, const std::vector<std::int64_t>& dims) {
  value* s = constant_i64("shape", {static_cast<std::int64_t>(dims.size())}, dims);
  bool known = std::none_of(dims.begin(), dims.end(), [](std::int64_t d) { return d <= 0; });
  return emit(node_spec{"Reshape", {x, s}, {}, {}, {}, {}}, known ? std::optional(float_tensor(dims)) : std::nullopt);
}

value* graph_builder::concat(const std::vector<value*>& xs, std::int64_t axis) {
  expects(!xs.empty(), "graph_builder::concat: no inputs");
  auto out = static_dims(xs.front());
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(out.size()) : axis);
  for (std::size_t k = 1; k < xs.size(); ++k) out[a] += static_dims(xs[k])[a];
  std::vector<attribute> attrs;
  attrs.push_back(attribute::make_int("axis", axis));
  return emit(node_spec{"Concat", xs, {}, std::move(attrs), {}, {}}, float_tensor(out));
}

model make_model(std::string graph_name, std::int64_t opset) {
  model m;
  m.ir_version = 8;
  m.opsets.push_back({"", opset});
  m.producer_name = "inferopt";
  m.graph().set_name(std::move(graph_name));
  return m;
}

}  // namespace inferopt::ir
