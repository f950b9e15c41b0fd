#include "inferopt/quant/smooth_quant.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::quant {

namespace {

/// An activation and the MatMuls (and Gemms without transA) on constant float32 weights
/// reading it as input 0.
struct linear_group {
  ir::value* x = nullptr;
  std::vector<ir::node*> readers;
};

/// The groups in graph order of their first reader (so that the edits, and the names they
/// make, do not depend on addresses).
std::vector<linear_group> linear_readers(ir::graph& g, std::int64_t ir_version) {
  std::vector<linear_group> groups;
  std::map<const ir::value*, std::size_t> index;
  for (ir::node* n : g.node_list()) {
    const bool linear = (n->is("MatMul") && n->inputs().size() == 2) || (n->is("Gemm") && n->attr_int("transA", 0) == 0);
    if (!linear || !n->input(0) || ir::is_constant(*n->input(0), ir_version)) continue;
    const ir::tensor* w = ir::constant_tensor(n->input(1), ir_version);
    if (!w || w->dtype != ir::data_type::float32 || w->dims.size() != 2) continue;
    auto [it, added] = index.try_emplace(n->input(0), groups.size());
    if (added) groups.push_back({n->input(0), {}});
    groups[it->second].readers.push_back(n);
  }
  return groups;
}

/// max |x_k| over the last axis of `t`, folded into `into` (sized on first use).
void fold_channel_maxima(const runtime::tensor& t, std::vector<double>& into) {
  if (t.dtype() != ir::data_type::float32 || t.rank() == 0 || t.element_count() == 0) return;
  const auto k = static_cast<std::size_t>(t.shape().back());
  if (into.empty()) into.assign(k, 0.0);
  if (into.size() != k) return;
  const auto v = t.values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) into[i % k] = std::max(into[i % k], double(std::abs(v[i])));
}

/// Per-channel maxima of every activation in `groups`, over the batches.
std::map<std::string, std::vector<double>> channel_maxima(const ir::model& m, const std::vector<linear_group>& groups,
                                                          std::span<const runtime::tensor_map> batches) {
  std::map<std::string, std::vector<double>> maxima;
  std::set<std::string, std::less<>> wanted;
  for (const linear_group& group : groups) wanted.insert(group.x->name());
  runtime::session_options options;
  options.threads = 1;
  options.on_value = [&](std::string_view name, const runtime::tensor& t) {
    if (auto it = wanted.find(name); it != wanted.end()) fold_channel_maxima(t, maxima[*it]);
  };
  runtime::session s(m, options);
  for (const runtime::tensor_map& feed : batches) {
    for (const auto& [name, t] : feed) {  // a linear layer may read a graph input directly
      if (wanted.contains(name)) fold_channel_maxima(t, maxima[name]);
    }
    (void)s.run(feed);
  }
  return maxima;
}

/// Whether row k of the [K, N] product weight is column k of the stored one (Gemm transB).
bool transposed(const ir::node& n) { return n.is("Gemm") && n.attr_int("transB", 0) != 0; }

/// Index of the reduction channel of stored weight element i, for dims [rows, cols].
std::size_t channel_of(std::size_t i, const std::vector<std::int64_t>& dims, bool trans) {
  const auto cols = static_cast<std::size_t>(dims[1]);
  return trans ? i % cols : i / cols;
}

double outlier_ratio(std::vector<double> maxima) {
  if (maxima.empty()) return 0.0;
  const double top = *std::max_element(maxima.begin(), maxima.end());
  std::nth_element(maxima.begin(), maxima.begin() + static_cast<std::ptrdiff_t>(maxima.size() / 2), maxima.end());
  const double median = maxima[maxima.size() / 2];
  return median > 0.0 ? top / median : 0.0;
}

/// The smoothing factors of one group, or a reason why there are none.
struct group_plan {
  std::vector<double> s;
  std::vector<std::vector<double>> weights;  // per reader, [K, N] row-major
  std::string problem;
};

group_plan plan_group(const std::vector<ir::node*>& readers, const std::vector<double>& act, double alpha, std::int64_t ir_version) {
  group_plan p;
  const auto k_of = [&](const ir::node* n) {
    const std::vector<std::int64_t>& d = ir::constant_tensor(n->input(1), ir_version)->dims;
    return transposed(*n) ? d[1] : d[0];
  };
  const std::int64_t k = k_of(readers[0]);
  if (static_cast<std::int64_t>(act.size()) != k) {
    p.problem = "its last dim is not the weights' K";
    return p;
  }
  std::vector<double> wmax(act.size(), 0.0);
  for (const ir::node* n : readers) {
    const ir::tensor* w = ir::constant_tensor(n->input(1), ir_version);
    if (k_of(n) != k) return {{}, {}, "its readers' weights differ in K"};
    p.weights.push_back(*ir::constant_floats(n->input(1), ir_version));
    const std::vector<double>& v = p.weights.back();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) return {{}, {}, "a weight is not finite"};
      const std::size_t c = channel_of(i, w->dims, transposed(*n));
      wmax[c] = std::max(wmax[c], std::abs(v[i]));
    }
  }
  for (std::size_t c = 0; c < act.size(); ++c) {
    const bool usable = act[c] > 0.0 && wmax[c] > 0.0 && std::isfinite(act[c]);
    const double s = usable ? std::pow(act[c], alpha) / std::pow(wmax[c], 1.0 - alpha) : 1.0;
    p.s.push_back(std::clamp(s, 1e-5, 1e5));
  }
  return p;
}

ir::tensor float_tensor(const std::string& name, std::vector<std::int64_t> dims, const std::vector<double>& values) {
  return ir::tensor::from_values<float>(name, std::move(dims), std::vector<float>(values.begin(), values.end()));
}

/// Divides the LayerNormalization producing `x` by s when x is read by the smoothed layers
/// only and gamma (and beta) are constant vectors of K; false when that does not hold.
bool fold_into_norm(ir::graph& g, ir::value* x, std::size_t readers, const std::vector<double>& s, std::int64_t ir_version) {
  ir::node* norm = x->producer();
  if (!norm || !norm->is("LayerNormalization") || norm->output(0) != x || x->is_graph_output() || x->uses().size() != readers) {
    return false;
  }
  const std::int64_t axis = norm->attr_int("axis", -1);
  const bool last_axis = axis == -1 || (x->type() && x->type()->is_tensor && x->type()->dims &&
                                        axis == static_cast<std::int64_t>(x->type()->dims->size()) - 1);
  if (!last_axis) return false;
  std::vector<std::vector<double>> scaled;
  for (std::size_t slot = 1; slot < std::min<std::size_t>(norm->inputs().size(), 3); ++slot) {
    const ir::tensor* t = norm->input(slot) ? ir::constant_tensor(norm->input(slot), ir_version) : nullptr;
    if (!t || t->dims.size() != 1 || t->dims[0] != static_cast<std::int64_t>(s.size())) return false;
    std::vector<double> v = *ir::constant_floats(norm->input(slot), ir_version);
    for (std::size_t c = 0; c < v.size(); ++c) v[c] /= s[c];
    scaled.push_back(std::move(v));
  }
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    const std::string name = norm->input(i + 1)->name();
    (void)ir::replace_constant_input(g, norm, i + 1, float_tensor(name, {static_cast<std::int64_t>(s.size())}, scaled[i]));
  }
  return true;
}

/// x / s through a new Mul that the smoothed layers read instead of x.
void insert_divisor(ir::graph& g, ir::value* x, const std::vector<ir::node*>& readers, const std::vector<double>& s) {
  std::vector<double> inverse;
  for (double v : s) inverse.push_back(1.0 / v);
  const std::string name = g.unique_name(x->name() + "_smooth_scale");
  ir::value* scale = g.add_initializer(name, float_tensor(name, {static_cast<std::int64_t>(s.size())}, inverse));
  ir::node* mul = g.add_node(ir::node_spec{"Mul", {x, scale}, {g.unique_name(x->name() + "_smoothed")}, {}, x->name() + "_smooth", {}},
                             readers.front());
  mul->output(0)->set_type(x->type());
  for (ir::node* n : readers) g.set_input(n, 0, mul->output(0));
}

}  // namespace

smooth_quant_report smooth_quant(ir::model& m, std::span<const runtime::tensor_map> batches, const smooth_quant_options& options) {
  if (!(options.alpha >= 0.0 && options.alpha <= 1.0)) {
    throw error(errc::invalid_argument, "smooth-quant: alpha must be in [0, 1], got " + std::to_string(options.alpha));
  }
  if (batches.empty()) throw error(errc::invalid_argument, "smooth-quant: needs calibration batches");
  ir::graph& g = m.graph();
  const std::int64_t ir_version = m.ir_version;
  const std::vector<linear_group> groups = linear_readers(g, ir_version);
  const std::map<std::string, std::vector<double>> maxima = channel_maxima(m, groups, batches);  // may throw: nothing edited yet

  smooth_quant_report report;
  for (const auto& [x, readers] : groups) {
    const auto found = maxima.find(x->name());
    const bool shared = std::any_of(readers.begin(), readers.end(), [](const ir::node* n) { return n->input(1)->uses().size() != 1; });
    group_plan p = found == maxima.end() ? group_plan{{}, {}, "it was never computed"}
                   : shared              ? group_plan{{}, {}, "a weight is read elsewhere too"}
                                         : plan_group(readers, found->second, options.alpha, ir_version);
    if (!p.problem.empty()) {
      report.skipped.push_back("'" + x->name() + "': " + p.problem);
      continue;
    }
    smoothed_activation a;
    a.value = x->name();
    a.outlier_ratio_before = outlier_ratio(found->second);
    std::vector<double> after = found->second;
    for (std::size_t c = 0; c < after.size(); ++c) after[c] /= p.s[c];
    a.outlier_ratio_after = outlier_ratio(after);
    for (std::size_t r = 0; r < readers.size(); ++r) {
      ir::node* n = readers[r];
      const std::vector<std::int64_t> dims = ir::constant_tensor(n->input(1), ir_version)->dims;
      std::vector<double>& w = p.weights[r];
      for (std::size_t i = 0; i < w.size(); ++i) w[i] *= p.s[channel_of(i, dims, transposed(*n))];
      (void)ir::replace_constant_input(g, n, 1, float_tensor(n->input(1)->name(), dims, w));
      a.layers.push_back(n->name());
    }
    a.folded_into_norm = fold_into_norm(g, x, readers.size(), p.s, ir_version);
    if (!a.folded_into_norm) insert_divisor(g, x, readers, p.s);
    report.smoothed.push_back(std::move(a));
  }
  return report;
}

}  // namespace inferopt::quant
