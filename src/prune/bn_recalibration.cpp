// BatchNormalization recalibration.
//
// Strategy: the executor has no train mode, so a private copy of the model gets one. Each
// chosen BatchNormalization of the copy becomes the train-mode computation, written with
// ordinary ops and without knowing the input's rank:
//
//   view = Reshape(x, [0, 0, -1])                  [N, C, S], S = product of spatial dims
//   mean = ReduceMean(view, axes {0, 2})           [1, C, 1]
//   centered = view - mean
//   var  = ReduceMean(centered * centered, axes {0, 2})   biased
//   y    = Reshape(centered / sqrt(var + epsilon) * scale + bias, Shape(x))
//
// with scale and bias reshaped to [1, C, 1]. An observer copies `view`'s shape, `mean` and
// `var` of every batch out of the run; the sums over batches are kept in double, and only
// after every batch succeeded are the caller's mean and variance replaced.

#include "inferopt/prune/bn_recalibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::prune {

namespace {

/// A BatchNormalization being recalibrated: where its statistics come from in the copy and
/// their sums over batches.
struct layer {
  ir::node* node = nullptr;  // in the caller's model
  std::int64_t channels = 0;
  std::string view_name;  // [N, C, S] view of the input in the copy: S * N values per channel
  std::string mean_name;  // batch mean in the copy
  std::string var_name;   // biased batch variance in the copy
  std::vector<double> mean_sum;  // sum over batches of the batch mean
  std::vector<double> var_sum;   // sum over batches of the unbiased batch variance
  std::int64_t samples = 0;
};

/// A node whose outputs past `Y` are read: it feeds running statistics to someone, which
/// only a training-form node does and which we cannot reproduce.
bool uses_extra_outputs(const ir::node& n) {
  for (std::size_t k = 1; k < n.outputs().size(); ++k) {
    const ir::value* out = n.output(k);
    if (out && (out->has_uses() || out->is_graph_output())) return true;
  }
  return false;
}

/// Before opset 9, `spatial = 0` keeps one statistic per activation, not per channel.
bool is_per_channel(const ir::node& n) { return n.attr_int("spatial", 1) != 0; }

/// The channel count when `n` is an inference-form BatchNormalization whose scale, bias, mean
/// and variance are constant floating-point vectors of one length; nullopt otherwise.
std::optional<std::int64_t> recalibratable_channels(const ir::node& n, std::int64_t ir_version) {
  if (!n.is("BatchNormalization") || n.inputs().size() != 5 || !n.input(0) || !n.output(0)) return std::nullopt;
  if (n.attr_int("training_mode", 0) != 0 || uses_extra_outputs(n) || !is_per_channel(n)) return std::nullopt;
  std::optional<std::size_t> channels;
  for (std::size_t k = 1; k < 5; ++k) {
    const std::optional<std::vector<double>> values = ir::constant_floats(n.input(k), ir_version);
    if (!values || values->empty() || (channels && *channels != values->size())) return std::nullopt;
    channels = values->size();
  }
  return static_cast<std::int64_t>(*channels);
}

/// A training-mode node computes `Y` from batch statistics already; the executor only runs
/// the inference form, so the copy spells it out as well (nothing is measured from it).
bool is_train_mode_we_can_run(const ir::node& n) {
  return n.is("BatchNormalization") && n.attr_int("training_mode", 0) != 0 && n.input(0) && n.input(1) &&
         n.input(2) && n.output(0) && !uses_extra_outputs(n) && is_per_channel(n);
}

/// The nodes `options.nodes` names (every BatchNormalization when empty), in graph order.
std::vector<ir::node*> chosen_nodes(const ir::graph& g, const bn_recalibration_options& options) {
  std::vector<ir::node*> chosen;
  std::unordered_set<std::string> wanted(options.nodes.begin(), options.nodes.end());
  for (ir::node* n : g.nodes()) {
    if (options.nodes.empty() ? n->is("BatchNormalization") : wanted.erase(n->name()) > 0) chosen.push_back(n);
  }
  if (!wanted.empty()) {
    throw error(errc::invalid_argument,
                "batch norm recalibration: no node named '" + *wanted.begin() + "' in the main graph");
  }
  return chosen;
}

/// The element type the replacement computes in: the input's, or the scale's when the input's
/// type is unknown (they agree for every opset before 15).
ir::data_type compute_type(const ir::node& bn) {
  if (ir::is_floating(bn.input(0)->elem_type())) return bn.input(0)->elem_type();
  if (ir::is_floating(bn.input(1)->elem_type())) return bn.input(1)->elem_type();
  return ir::data_type::float32;
}

/// The names the replacement gave its statistics.
struct statistics_names {
  std::string view, mean, var;
};

/// Replaces `bn` (in the copy) by the train-mode computation of the file comment.
statistics_names normalize_with_batch_statistics(ir::graph& g, ir::node* bn, std::int64_t opset) {
  const std::string base = (bn->name().empty() ? std::string("batch_norm") : bn->name()) + "/";
  const auto constant = [&](const std::string& what, ir::tensor t) {
    return g.add_initializer(g.unique_name(base + what), std::move(t));
  };
  const auto ints = [](std::vector<std::int64_t> v) {
    const auto size = static_cast<std::int64_t>(v.size());
    return ir::tensor::from_values<std::int64_t>("", {size}, v);
  };
  const auto add = [&](const std::string& op, std::vector<ir::value*> inputs, const std::string& what,
                       std::vector<ir::attribute> attributes = {}) {
    const std::string name = g.unique_name(base + what);
    ir::node_spec spec{op, std::move(inputs), {name}, std::move(attributes), name, {}};
    return g.add_node(std::move(spec), bn)->output(0);
  };
  // Axes moved from an attribute to an input at opset 18.
  ir::value* axes_input = opset >= 18 ? constant("axes", ints({0, 2})) : nullptr;
  const auto reduce_mean = [&](ir::value* x, const std::string& what) {
    if (axes_input) return add("ReduceMean", {x, axes_input}, what);
    std::vector<ir::attribute> attributes;
    attributes.push_back(ir::attribute::make_ints("axes", {0, 2}));
    return add("ReduceMean", {x}, what, std::move(attributes));
  };
  ir::tensor like;
  like.dtype = compute_type(*bn);
  const double epsilon = bn->attr_float("epsilon", 1e-5f);

  ir::value* x = bn->input(0);
  ir::value* view = add("Reshape", {x, constant("as_3d", ints({0, 0, -1}))}, "view");
  ir::value* per_channel = constant("per_channel", ints({1, -1, 1}));
  ir::value* mean = reduce_mean(view, "batch_mean");
  ir::value* centered = add("Sub", {view, mean}, "centered");
  ir::value* var = reduce_mean(add("Mul", {centered, centered}, "squared"), "batch_var");
  ir::value* eps = constant("epsilon", ir::floats_as(like, {}, std::vector<double>{epsilon}));
  ir::value* normalized = add("Div", {centered, add("Sqrt", {add("Add", {var, eps}, "var_eps")}, "std")}, "normalized");
  ir::value* scaled = add("Mul", {normalized, add("Reshape", {bn->input(1), per_channel}, "scale")}, "scaled");
  ir::value* shifted = add("Add", {scaled, add("Reshape", {bn->input(2), per_channel}, "bias")}, "shifted");
  ir::value* y = add("Reshape", {shifted, add("Shape", {x}, "input_shape")}, "y");

  g.replace_all_uses(bn->output(0), y);
  g.erase(bn);
  return {view->name(), mean->name(), var->name()};
}

/// The private copy: `layers` measure their batch statistics, train-mode nodes use theirs.
ir::model statistics_model(const ir::model& m, std::vector<layer>& layers) {
  ir::model copy = m.clone();
  ir::graph& g = copy.graph();
  const std::int64_t opset = m.opset("").value_or(0);
  if (opset < 5) {
    throw error(errc::unsupported, "batch norm recalibration: opset " + std::to_string(opset) + " is older than 5");
  }
  // The copy has the same value names; a node is found through its output.
  const auto in_copy = [&](const ir::node* n) { return g.find_value(n->output(0)->name())->producer(); };
  for (layer& l : layers) {
    const statistics_names names = normalize_with_batch_statistics(g, in_copy(l.node), opset);
    l.view_name = names.view;
    l.mean_name = names.mean;
    l.var_name = names.var;
  }
  for (ir::node* n : m.graph().node_list()) {
    if (is_train_mode_we_can_run(*n)) (void)normalize_with_batch_statistics(g, in_copy(n), opset);
  }
  return copy;
}

/// A statistic widened to double.
std::vector<double> widen(const runtime::tensor& t) {
  switch (t.dtype()) {
    case ir::data_type::float64: {
      const auto v = t.values<double>();
      return {v.begin(), v.end()};
    }
    case ir::data_type::float32: {
      const auto v = t.values<float>();
      return {v.begin(), v.end()};
    }
    default: {
      const std::vector<float> v = t.to_float();  // float16 and bfloat16
      return {v.begin(), v.end()};
    }
  }
}

/// What one run of the copy reported for one layer.
struct batch_statistics {
  std::int64_t per_channel = -1;  // values per channel; -1 until seen
  std::vector<double> mean;
  std::vector<double> var;
};

/// Runs every batch through the copy and adds its statistics to `layers`.
void measure(const ir::model& copy, std::span<const runtime::tensor_map> batches, std::vector<layer>& layers,
             int threads) {
  std::vector<batch_statistics> seen(layers.size());
  // Which statistic each observed name is: (layer, 0 view / 1 mean / 2 var).
  std::map<std::string, std::pair<std::size_t, int>, std::less<>> watched;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    watched[layers[i].view_name] = {i, 0};
    watched[layers[i].mean_name] = {i, 1};
    watched[layers[i].var_name] = {i, 2};
  }
  runtime::session_options session_options;
  session_options.threads = threads;
  session_options.on_value = [&](std::string_view name, const runtime::tensor& value) {
    const auto it = watched.find(name);
    if (it == watched.end()) return;
    batch_statistics& s = seen[it->second.first];
    if (it->second.second == 0) s.per_channel = value.rank() == 3 ? value.dim(0) * value.dim(2) : -1;
    if (it->second.second == 1) s.mean = widen(value);
    if (it->second.second == 2) s.var = widen(value);
  };
  runtime::session session(copy, session_options);

  for (std::size_t b = 0; b < batches.size(); ++b) {
    std::fill(seen.begin(), seen.end(), batch_statistics{});
    (void)session.run(batches[b]);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      layer& l = layers[i];
      const batch_statistics& s = seen[i];
      const auto channels = static_cast<std::size_t>(l.channels);
      if (s.per_channel < 2) {
        throw error(errc::invalid_argument, "batch " + std::to_string(b) + ": node " + l.node->describe() + " sees " +
                                                std::to_string(std::max<std::int64_t>(s.per_channel, 0)) +
                                                " value(s) per channel; the unbiased variance needs at least 2");
      }
      if (s.mean.size() != channels || s.var.size() != channels) {
        throw error(errc::invalid_argument, "batch " + std::to_string(b) + ": node " + l.node->describe() +
                                                ": input has a channel count other than its " +
                                                std::to_string(channels) + " parameters");
      }
      const double n = static_cast<double>(s.per_channel);
      for (std::size_t c = 0; c < channels; ++c) {
        l.mean_sum[c] += s.mean[c];
        l.var_sum[c] += s.var[c] * n / (n - 1.0);  // Bessel's correction, as PyTorch's running_var
      }
      l.samples += s.per_channel;
    }
  }
}

/// Replaces input `index` of `n` by `values` in the old tensor's element type and dims; another
/// reader of the old tensor keeps its values.
void replace_statistic(ir::graph& g, ir::node* n, std::size_t index, std::span<const double> values) {
  const ir::tensor& like = *n->input(index)->initializer();
  (void)ir::replace_constant_input(g, n, index, ir::floats_as(like, like.dims, values));
}

}  // namespace

bn_recalibration_result recalibrate_batch_norm(ir::model& m, std::span<const runtime::tensor_map> batches,
                                               const bn_recalibration_options& options) {
  expects(!batches.empty(), "batch norm recalibration needs at least one batch");
  std::vector<layer> layers;
  for (ir::node* n : chosen_nodes(m.graph(), options)) {
    const std::optional<std::int64_t> channels = recalibratable_channels(*n, m.ir_version);
    if (!channels) continue;
    layer l;
    l.node = n;
    l.channels = *channels;
    l.mean_sum.assign(static_cast<std::size_t>(*channels), 0.0);
    l.var_sum.assign(static_cast<std::size_t>(*channels), 0.0);
    layers.push_back(std::move(l));
  }
  bn_recalibration_result result;
  if (layers.empty()) return result;

  measure(statistics_model(m, layers), batches, layers, options.threads);

  // Every statistic is checked before the first one is written, so a failure edits nothing.
  const double count = static_cast<double>(batches.size());
  std::vector<std::pair<std::vector<double>, std::vector<double>>> averages;
  for (const layer& l : layers) {
    std::vector<double> mean(l.mean_sum.size()), var(l.var_sum.size());
    for (std::size_t c = 0; c < mean.size(); ++c) {
      mean[c] = l.mean_sum[c] / count;
      var[c] = l.var_sum[c] / count;
      if (!std::isfinite(mean[c]) || !std::isfinite(var[c])) {
        throw error(errc::invalid_argument, "node " + l.node->describe() + ": channel " + std::to_string(c) +
                                                " has a non-finite batch mean or variance");
      }
    }
    averages.emplace_back(std::move(mean), std::move(var));
  }
  result.samples = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    replace_statistic(m.graph(), layers[i].node, 3, averages[i].first);
    replace_statistic(m.graph(), layers[i].node, 4, averages[i].second);
    result.samples = std::min(result.samples, layers[i].samples);
  }
  result.layers = static_cast<std::int64_t>(layers.size());
  result.batches = static_cast<std::int64_t>(batches.size());
  return result;
}

}  // namespace inferopt::prune
