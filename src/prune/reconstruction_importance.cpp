// reconstruction_importance and greedy_reconstruction_importance (calibrated_pruning.hpp):
// Optimal Brain Surgeon saliencies of each unit at its MatMul/Gemm readers, from the readers'
// input moments.
//
// Removing input rows S of a layer whose other inputs are refit by least squares leaves the
// error trace(W_S^T ([H^-1]_SS)^-1 W_S), H being the moments [X 1]^T [X 1] (ridged on X):
// the energy a unit adds minus what the others can take over. FFN neurons are largely
// redundant (the refit recovers most of them), heads much less; the cut energy alone ranks
// them the same. Around one unit alone that saliency is optimistic for neurons that stand in
// for each other: only one of them can go for free. The greedy form removes them in turn and
// charges each what it adds after the ones before it, the sum being the exact error of
// removing them together.

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <map>

#include "inferopt/prune/calibrated_pruning.hpp"
#include "gram_matrix.hpp"
#include "linear_weight.hpp"
#include "observe_inputs.hpp"

namespace inferopt::prune {
namespace {

using matrix = dense_matrix;

/// The ridged inverse of the augmented moments (the bias row stays unridged).
matrix inverse_moments(const input_gram& gram, double relative_ridge) {
  const matrix h = ridged_moments_matrix(gram, relative_ridge);
  const Eigen::LLT<matrix> llt(h);
  if (llt.info() != Eigen::Success) throw error(errc::invalid_argument, "reconstruction importance: the calibration moments are not positive definite");
  return llt.solve(matrix::Identity(h.rows(), h.cols()));
}

/// Saliency of positions `s`: trace(W_S^T ([H^-1]_SS)^-1 W_S).
double saliency(const matrix& inverse, const matrix& w, const std::vector<std::int64_t>& s) {
  const auto m = static_cast<Eigen::Index>(s.size());
  matrix block(m, m), rows(m, w.cols());
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index j = 0; j < m; ++j) block(i, j) = inverse(s[i], s[j]);
    rows.row(i) = w.row(s[i]);
  }
  const matrix solved = block.llt().solve(rows);
  return std::max((rows.array() * solved.array()).sum(), 0.0);
}

/// The positions of each prunable unit at one reader.
using unit_positions = std::map<std::pair<std::size_t, std::size_t>, std::vector<std::int64_t>>;

/// Removes the reader's units one at a time, the one whose removal leaves the least error
/// first, the others refit after each (OBS with the inverse and the weights updated, as
/// SparseGPT does per column): a unit's score is the error its removal adds to what was removed
/// before it, made non-decreasing along the order so that a global ranking takes prefixes.
void add_greedy_saliencies(matrix inverse, matrix w, const unit_positions& units, double rows,
                           std::vector<std::vector<double>>& scores) {
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::vector<std::int64_t>>> left(units.begin(), units.end());
  double floor = 0.0;
  while (!left.empty()) {
    std::size_t best = 0;
    double best_saliency = 0.0;
    for (std::size_t i = 0; i < left.size(); ++i) {
      const double s = saliency(inverse, w, left[i].second);
      if (i == 0 || s < best_saliency) best = i, best_saliency = s;
    }
    const std::vector<std::int64_t>& p = left[best].second;
    const auto m = static_cast<Eigen::Index>(p.size());
    matrix block(m, m), columns(inverse.rows(), m), rows_of_w(m, w.cols());
    for (Eigen::Index i = 0; i < m; ++i) {
      for (Eigen::Index j = 0; j < m; ++j) block(i, j) = inverse(p[i], p[j]);
      columns.col(i) = inverse.col(p[i]);
      rows_of_w.row(i) = w.row(p[i]);
    }
    const Eigen::LLT<matrix> llt(block);
    // The refit of the others: W -= H^-1[:, P] (H^-1_PP)^-1 W_P; the inverse without P likewise.
    w.noalias() -= columns * llt.solve(rows_of_w);
    inverse.noalias() -= columns * llt.solve(matrix(columns.transpose()));
    for (std::int64_t q : p) {
      w.row(q).setZero();
      inverse.row(q).setZero();
      inverse.col(q).setZero();
      inverse(q, q) = 1.0;  // keeps later blocks' factorisations defined; q is never chosen again
    }
    floor = std::max(floor, best_saliency);
    scores[left[best].first.first][left[best].first.second] += floor / rows;
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
  }
}

/// Scores every unit at its MatMul/Gemm readers with `score(inverse moments, weight rows,
/// unit positions, rows, scores)`; Conv readers count their output energy.
template <class Score>
std::vector<std::vector<double>> score_at_linear_readers(const ir::model& m, const channel_analysis& a,
                                                         std::span<const runtime::tensor_map> batches,
                                                         const refit_plan_options& options, Score score) {
  std::vector<channel_reader> readers;
  for (const channel_reader& r : channel_readers(a)) {
    if (r.node->is("MatMul") || r.node->is("Gemm")) readers.push_back(r);
  }
  std::vector<std::vector<double>> scores = output_energy_importance(m, a, batches, /*conv_only=*/true);
  std::vector<std::int64_t> bytes;
  for (const channel_reader& r : readers) {
    const auto k = static_cast<std::int64_t>(r.site->layout.size()) + 1;
    bytes.push_back(k * k * 8);
  }
  in_passes(bytes, options.max_gram_bytes, [&](std::size_t first, std::size_t last) {
    std::vector<const cut_site*> sites;
    for (std::size_t i = first; i < last; ++i) sites.push_back(readers[i].site);
    const std::vector<input_gram> grams = reader_input_grams(m, sites, batches);
    for (std::size_t i = first; i < last; ++i) {
      const channel_reader& r = readers[i];
      const input_gram& gram = grams[i - first];
      std::int64_t outputs = 0;
      const bool transposed = r.node->is("Gemm") && r.node->attr_int("transB", 0) != 0;
      const std::vector<float> stored = weight_rows(*r.node, transposed, m.ir_version, outputs);
      matrix w = matrix::Zero(gram.features() + 1, outputs);  // the constant's row stays 0: never removed
      w.topRows(gram.features()) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                                       stored.data(), gram.features(), outputs).cast<double>();
      unit_positions positions;
      for (std::size_t p = 0; p < r.site->layout.size(); ++p) {
        const channel_id id = r.site->layout[p];
        if (a.groups[a.group_of_channel[id]].prunable()) positions[{a.group_of_channel[id], a.unit_of_channel[id]}].push_back(static_cast<std::int64_t>(p));
      }
      score(inverse_moments(gram, options.solve.relative_ridge), std::move(w), positions,
            static_cast<double>(std::max<std::int64_t>(gram.rows(), 1)), scores);
    }
  });
  return scores;
}

}  // namespace

std::vector<std::vector<double>> reconstruction_importance(const ir::model& m, const channel_analysis& a,
                                                           std::span<const runtime::tensor_map> batches,
                                                           const refit_plan_options& options) {
  return score_at_linear_readers(m, a, batches, options,
                                 [](const matrix& inverse, const matrix& w, const unit_positions& units, double rows,
                                    std::vector<std::vector<double>>& scores) {
                                   for (const auto& [unit, s] : units) scores[unit.first][unit.second] += saliency(inverse, w, s) / rows;
                                 });
}

std::vector<std::vector<double>> greedy_reconstruction_importance(const ir::model& m, const channel_analysis& a,
                                                                  std::span<const runtime::tensor_map> batches,
                                                                  const refit_plan_options& options) {
  return score_at_linear_readers(m, a, batches, options, add_greedy_saliencies);
}

}  // namespace inferopt::prune
