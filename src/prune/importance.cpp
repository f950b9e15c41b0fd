#include "inferopt/prune/importance.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::prune {

std::optional<importance_criterion> parse_criterion(std::string_view name) {
  if (name == "l1") return importance_criterion::l1;
  if (name == "l2") return importance_criterion::l2;
  if (name == "bn") return importance_criterion::bn_scale;
  if (name == "fpgm") return importance_criterion::fpgm;
  if (name == "random") return importance_criterion::random;
  if (name == "energy") return importance_criterion::output_energy;
  if (name == "obs") return importance_criterion::reconstruction;
  if (name == "obs-greedy") return importance_criterion::greedy_reconstruction;
  return std::nullopt;
}

std::string_view to_string(importance_criterion c) noexcept {
  switch (c) {
    case importance_criterion::l1: return "l1";
    case importance_criterion::l2: return "l2";
    case importance_criterion::bn_scale: return "bn";
    case importance_criterion::fpgm: return "fpgm";
    case importance_criterion::random: return "random";
    case importance_criterion::output_energy: return "energy";
    case importance_criterion::reconstruction: return "obs";
    case importance_criterion::greedy_reconstruction: return "obs-greedy";
  }
  return "?";
}

std::optional<score_reduction> parse_reduction(std::string_view name) {
  if (name == "mean") return score_reduction::mean;
  if (name == "sum") return score_reduction::sum;
  if (name == "max") return score_reduction::max;
  return std::nullopt;
}

namespace {

/// A weight seen along one axis: element (outer o, slice c, inner i) is at (o*count + c)*inner + i.
struct axis_view {
  std::int64_t outer = 1, count = 0, inner = 1;
  axis_view(const ir::tensor& t, std::int64_t axis) : count(t.dims[axis]) {
    for (std::int64_t i = 0; i < axis; ++i) outer *= t.dims[i];
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < t.dims.size(); ++i) inner *= t.dims[i];
  }
};

/// One score per output channel of a source's producer; null when its weights hold no
/// readable data (a ConstantOfShape weight: every filter is the same, so no channel wins).
std::optional<std::vector<double>> filter_scores(std::int64_t ir_version, const channel_source& s,
                                                 importance_criterion criterion) {
  const ir::value* w = s.producer->input(s.weight_input);
  const ir::tensor* t = ir::constant_tensor(w, ir_version);
  const auto values = ir::constant_floats(w, ir_version);
  if (!t || !values) return std::nullopt;
  const axis_view v(*t, s.weight_axis);
  const auto at = [&](std::int64_t o, std::int64_t c, std::int64_t i) {
    return (*values)[static_cast<std::size_t>((o * v.count + c) * v.inner + i)];
  };
  std::vector<double> scores(static_cast<std::size_t>(v.count), 0.0);
  if (criterion == importance_criterion::fpgm) {
    // Sum of distances to the layer's other filters: the filters closest to the geometric
    // median are the ones the others can best stand in for.
    for (std::int64_t c = 0; c < v.count; ++c) {
      for (std::int64_t d = c + 1; d < v.count; ++d) {
        double squared = 0.0;
        for (std::int64_t o = 0; o < v.outer; ++o) {
          for (std::int64_t i = 0; i < v.inner; ++i) squared += (at(o, c, i) - at(o, d, i)) * (at(o, c, i) - at(o, d, i));
        }
        const double distance = std::sqrt(squared);
        scores[c] += distance;
        scores[d] += distance;
      }
    }
    return scores;
  }
  // L1 or L2 norm of each slice, read in place.
  for (std::int64_t o = 0; o < v.outer; ++o) {
    for (std::int64_t c = 0; c < v.count; ++c) {
      for (std::int64_t i = 0; i < v.inner; ++i) {
        const double x = at(o, c, i);
        scores[c] += criterion == importance_criterion::l1 ? std::abs(x) : x * x;
      }
    }
  }
  if (criterion != importance_criterion::l1) {
    for (double& score : scores) score = std::sqrt(score);
  }
  return scores;
}

/// |gamma| per channel id from every BatchNormalization cut site (largest when several).
std::map<channel_id, double> batch_norm_scales(std::int64_t ir_version, const channel_analysis& a) {
  std::map<channel_id, double> out;
  for (const cut_site& s : a.sites) {
    if (s.kind != cut_kind::constant_axis || !s.node->is("BatchNormalization") || s.input_index != 1) continue;
    const auto gamma = ir::constant_floats(s.node->input(1), ir_version);
    if (!gamma || gamma->size() != s.layout.size()) continue;
    for (std::size_t p = 0; p < s.layout.size(); ++p) {
      double& score = out[s.layout[p]];
      score = std::max(score, std::abs((*gamma)[p]));
    }
  }
  return out;
}

double reduce(const std::vector<double>& xs, score_reduction how) {
  if (xs.empty()) return 0.0;
  if (how == score_reduction::max) return *std::max_element(xs.begin(), xs.end());
  double sum = 0.0;
  for (double x : xs) sum += x;
  return how == score_reduction::sum ? sum : sum / static_cast<double>(xs.size());
}

}  // namespace

bool needs_calibration(importance_criterion c) noexcept {
  return c == importance_criterion::output_energy || c == importance_criterion::reconstruction ||
         c == importance_criterion::greedy_reconstruction;
}

std::vector<std::vector<double>> unit_importance(const ir::model& m, const channel_analysis& a,
                                                 const importance_options& options) {
  if (needs_calibration(options.criterion)) {
    throw error(errc::invalid_argument, "the " + std::string(to_string(options.criterion)) + " criterion needs calibration data");
  }
  const std::int64_t ir_version = m.ir_version;
  std::vector<std::vector<double>> out(a.groups.size());
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const auto bn = options.criterion == importance_criterion::bn_scale ? batch_norm_scales(ir_version, a)
                                                                      : std::map<channel_id, double>{};
  const importance_criterion filter_criterion =
      options.criterion == importance_criterion::bn_scale ? importance_criterion::l2 : options.criterion;

  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const channel_group& group = a.groups[g];
    if (!group.prunable()) continue;
    std::vector<double>& scores = out[g];
    scores.assign(group.units.size(), 0.0);
    if (options.criterion == importance_criterion::random) {
      for (double& s : scores) s = uniform(rng);
      continue;
    }
    // Per channel id: the score its source's filter gets (or its BN gamma).
    std::map<channel_id, double> channel_score;
    bool group_has_bn = false;
    if (options.criterion == importance_criterion::bn_scale) {
      for (const channel_unit& u : group.units) {
        for (channel_id id : u.channels) group_has_bn = group_has_bn || bn.count(id);
      }
    }
    if (group_has_bn) {
      channel_score = bn;
    } else {
      for (std::size_t s : group.sources) {
        const channel_source& src = a.sources[s];
        if (auto f = filter_scores(ir_version, src, filter_criterion)) {
          for (std::int64_t i = 0; i < src.channels; ++i) channel_score[src.first + i] = (*f)[i];
        }
      }
    }
    for (std::size_t u = 0; u < group.units.size(); ++u) {
      std::vector<double> member;
      for (channel_id id : group.units[u].channels) {
        if (auto it = channel_score.find(id); it != channel_score.end()) member.push_back(it->second);
      }
      scores[u] = reduce(member, options.reduction);
    }
  }
  return out;
}

}  // namespace inferopt::prune
