#include "inferopt/prune/calibrated_pruning.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "cuttable_constant.hpp"
#include "observe_inputs.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt::prune {
namespace {

using unit_key = std::pair<std::size_t, std::size_t>;  // (group, unit)

unit_key unit_at(const channel_analysis& a, channel_id id) { return {a.group_of_channel[id], a.unit_of_channel[id]}; }

/// The axis of input 0 that a reader's cut site runs over, when the site is a reader's.
std::optional<std::int64_t> reader_axis(const cut_site& s) {
  if (s.kind != cut_kind::constant_axis || s.input_index != 1 || !s.node->is_onnx_domain()) return std::nullopt;
  const ir::node& n = *s.node;
  if (n.is("MatMul") && s.axis == 0) {
    const auto rank = ir::known_rank(n.input(0));
    if (rank && *rank >= 2) return static_cast<std::int64_t>(*rank) - 1;
  }
  if (n.is("Gemm") && n.attr_int("transA", 0) == 0 && s.axis == (n.attr_int("transB", 0) != 0 ? 1 : 0)) return 1;
  if (n.is("Conv") && n.attr_int("group", 1) == 1 && s.axis == 1) return 1;
  return std::nullopt;
}

bool is_linear(const ir::node& n) { return n.is("MatMul") || n.is("Gemm"); }

/// The reader's weight as one slice per input position (row p of a MatMul's B, column p of a
/// transposed Gemm's, W[:, p, ...] of a Conv's): the dot products of slices weigh the moments.
class weight_slices {
 public:
  weight_slices(const ir::node& n, std::int64_t ir_version) {
    const ir::tensor* w = ir::constant_tensor(n.input(1), ir_version);
    expects(w != nullptr, "a reader's weight is a constant");
    const std::vector<double> values = *ir::constant_floats(n.input(1), ir_version);
    values_.assign(values.begin(), values.end());
    dims_ = w->dims;
    transposed_ = n.is("Gemm") && n.attr_int("transB", 0) != 0;
    conv_ = n.is("Conv");
  }

  [[nodiscard]] std::vector<float> slice(std::int64_t p) const {
    std::vector<float> out;
    if (conv_) {
      const std::int64_t inputs = dims_[1];
      const std::int64_t taps = static_cast<std::int64_t>(values_.size()) / (dims_[0] * inputs);
      for (std::int64_t o = 0; o < dims_[0]; ++o) {
        const auto from = values_.begin() + (o * inputs + p) * taps;
        out.insert(out.end(), from, from + taps);
      }
    } else if (transposed_) {
      for (std::int64_t o = 0; o < dims_[0]; ++o) out.push_back(values_[static_cast<std::size_t>(o * dims_[1] + p)]);
    } else {
      const auto from = values_.begin() + p * dims_[1];
      out.assign(from, from + dims_[1]);
    }
    return out;
  }

 private:
  std::vector<float> values_;
  std::vector<std::int64_t> dims_;
  bool transposed_ = false;
  bool conv_ = false;
};

double dot(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * y[i];
  return s;
}

/// One unit's positions at one reader, with their second moments.
struct moment_block {
  unit_key unit;
  std::vector<std::int64_t> positions;
  std::vector<double> moments;  // positions^2, row-major
};

std::vector<moment_block> blocks_of(const channel_analysis& a, const cut_site& s) {
  std::map<unit_key, std::vector<std::int64_t>> positions;
  for (std::size_t p = 0; p < s.layout.size(); ++p) {
    if (a.groups[a.group_of_channel[s.layout[p]]].prunable()) positions[unit_at(a, s.layout[p])].push_back(static_cast<std::int64_t>(p));
  }
  std::vector<moment_block> out;
  for (auto& [unit, ps] : positions) out.push_back({unit, ps, std::vector<double>(ps.size() * ps.size(), 0.0)});
  return out;
}

/// Adds the rows of `t` (features on `axis`) to every block's moments; returns the row count.
std::int64_t accumulate(const runtime::tensor& t, std::int64_t axis, std::vector<moment_block>& blocks) {
  const auto v = t.values<float>();
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const std::int64_t k = t.dim(static_cast<std::size_t>(axis));
  const std::int64_t rows = t.element_count() / k;
  std::vector<double> x;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t base = (r / inner) * k * inner + r % inner;
    for (moment_block& b : blocks) {
      x.resize(b.positions.size());
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = v[static_cast<std::size_t>(base + b.positions[i] * inner)];
      for (std::size_t i = 0; i < x.size(); ++i) {
        for (std::size_t j = 0; j < x.size(); ++j) b.moments[i * x.size() + j] += x[i] * x[j];
      }
    }
  }
  return rows;
}

double block_energy(const moment_block& b, const weight_slices& w) {
  std::vector<std::vector<float>> slices;
  for (std::int64_t p : b.positions) slices.push_back(w.slice(p));
  double e = 0.0;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    for (std::size_t j = 0; j < slices.size(); ++j) e += b.moments[i * slices.size() + j] * dot(slices[i], slices[j]);
  }
  return e;
}

std::vector<std::vector<double>> empty_scores(const channel_analysis& a) {
  std::vector<std::vector<double>> scores(a.groups.size());
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    if (a.groups[g].prunable()) scores[g].assign(a.groups[g].units.size(), 0.0);
  }
  return scores;
}

}  // namespace

std::vector<channel_reader> channel_readers(const channel_analysis& a) {
  std::vector<channel_reader> out;
  for (const cut_site& s : a.sites) {
    const auto axis = reader_axis(s);
    if (!axis || s.layout.empty()) continue;
    const bool prunable = std::any_of(s.layout.begin(), s.layout.end(), [&](channel_id id) { return a.groups[a.group_of_channel[id]].prunable(); });
    if (prunable && s.node->input(0)) out.push_back({&s, s.node, *axis});
  }
  return out;
}

std::vector<std::vector<double>> output_energy_importance(const ir::model& m, const channel_analysis& a,
                                                          std::span<const runtime::tensor_map> batches, bool conv_readers_only) {
  if (batches.empty()) throw error(errc::invalid_argument, "calibrated pruning needs calibration batches");
  std::vector<channel_reader> readers;
  for (const channel_reader& r : channel_readers(a)) {
    if (!conv_readers_only || !is_linear(*r.node)) readers.push_back(r);
  }
  std::vector<std::vector<double>> scores = empty_scores(a);
  if (readers.empty()) return scores;
  std::vector<std::vector<moment_block>> blocks;
  std::vector<std::int64_t> rows(readers.size(), 0);
  std::vector<const ir::value*> inputs;
  for (const channel_reader& r : readers) {
    blocks.push_back(blocks_of(a, *r.site));
    inputs.push_back(r.node->input(0));
  }
  observe_inputs(m, inputs, batches, [&](std::size_t i, const runtime::tensor& t) {
    const auto axis = static_cast<std::size_t>(readers[i].feature_axis);
    if (t.rank() <= axis || t.dim(axis) != static_cast<std::int64_t>(readers[i].site->layout.size())) {
      throw error(errc::invalid_argument, "calibration activation '" + readers[i].node->input(0)->name() + "' does not have the analysed shape");
    }
    rows[i] += accumulate(t, readers[i].feature_axis, blocks[i]);
  });
  for (std::size_t i = 0; i < readers.size(); ++i) {
    const weight_slices w(*readers[i].node, m.ir_version);
    for (const moment_block& b : blocks[i]) {
      scores[b.unit.first][b.unit.second] += block_energy(b, w) / static_cast<double>(std::max<std::int64_t>(rows[i], 1));
    }
  }
  return scores;
}

std::vector<std::vector<double>> unit_weight_counts(const ir::model& m, const channel_analysis& a) {
  std::vector<std::vector<double>> counts = empty_scores(a);
  for (const cut_site& s : a.sites) {
    if (s.kind != cut_kind::constant_axis && s.kind != cut_kind::grouped_input_axis) continue;
    const auto c = cuttable_constant(s.node->input(s.input_index), m.ir_version);
    if (!c || s.layout.empty()) continue;
    const double per_position = static_cast<double>(ir::tensor::element_count(c->dims)) / static_cast<double>(s.layout.size());
    for (channel_id id : s.layout) {
      const auto [g, u] = unit_at(a, id);
      if (!counts[g].empty()) counts[g][u] += per_position;
    }
  }
  return counts;
}

}  // namespace inferopt::prune
