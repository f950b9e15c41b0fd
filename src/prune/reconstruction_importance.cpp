// reconstruction_importance (calibrated_pruning.hpp): the Optimal Brain Surgeon saliency of
// each unit at its MatMul/Gemm readers, from the readers' input moments.
//
// Removing input rows S of a layer whose other inputs are refit by least squares leaves the
// error trace(W_S^T ([H^-1]_SS)^-1 W_S), H being the moments [X 1]^T [X 1] (ridged on X):
// the energy a unit adds minus what the others can take over. FFN neurons are largely
// redundant (the refit recovers most of them), heads much less; the cut energy alone ranks
// them the same.

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

}  // namespace

std::vector<std::vector<double>> reconstruction_importance(const ir::model& m, const channel_analysis& a,
                                                           std::span<const runtime::tensor_map> batches,
                                                           const refit_plan_options& options) {
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
      const matrix inverse = inverse_moments(gram, options.solve.relative_ridge);
      std::int64_t outputs = 0;
      const bool transposed = r.node->is("Gemm") && r.node->attr_int("transB", 0) != 0;
      const std::vector<float> stored = weight_rows(*r.node, transposed, m.ir_version, outputs);
      const matrix w = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                           stored.data(), gram.features(), outputs).cast<double>();
      std::map<std::pair<std::size_t, std::size_t>, std::vector<std::int64_t>> positions;
      for (std::size_t p = 0; p < r.site->layout.size(); ++p) {
        const channel_id id = r.site->layout[p];
        if (a.groups[a.group_of_channel[id]].prunable()) positions[{a.group_of_channel[id], a.unit_of_channel[id]}].push_back(static_cast<std::int64_t>(p));
      }
      for (const auto& [unit, s] : positions) {
        scores[unit.first][unit.second] += saliency(inverse, w, s) / static_cast<double>(std::max<std::int64_t>(gram.rows(), 1));
      }
    }
  });
  return scores;
}

}  // namespace inferopt::prune
