#include "inferopt/prune/least_squares_refit.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

#include "gram_matrix.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::prune {

namespace {

using matrix = dense_matrix;

/// The squared output error of candidate rows `c` on the kept inputs: || X_K c - X w ||^2
/// expanded over the moments (`total` is || X w ||^2, `cross` is G[K, :] w, `kept_gram` G[K, K]).
double squared_error(const matrix& c, const matrix& cross, const matrix& kept_gram, double total) {
  const double e = total - 2.0 * (c.array() * cross.array()).sum() + (c.array() * (kept_gram * c).array()).sum();
  return std::max(e, 0.0);  // cancellation can leave a tiny negative
}

void check_kept(std::span<const std::int64_t> kept, std::int64_t features) {
  for (std::size_t k = 0; k < kept.size(); ++k) {
    if (kept[k] < 0 || kept[k] >= features || (k > 0 && kept[k] <= kept[k - 1])) {
      throw error(errc::invalid_argument, "refit_after_cut: kept rows must be ascending, distinct and below " + std::to_string(features));
    }
  }
}

}  // namespace

input_gram::input_gram(std::int64_t features) : features_(features) {
  if (features < 1) throw error(errc::invalid_argument, "input_gram: a layer input needs at least one feature");
  gram_.assign(static_cast<std::size_t>((features + 1) * (features + 1)), 0.0);
}

void input_gram::add(std::span<const float> rows) {
  if (rows.size() % static_cast<std::size_t>(features_) != 0) {
    throw error(errc::invalid_argument, "input_gram: " + std::to_string(rows.size()) + " values are not rows of " + std::to_string(features_));
  }
  if (!std::all_of(rows.begin(), rows.end(), [](float v) { return std::isfinite(v); })) {
    throw error(errc::invalid_argument, "input_gram: calibration activations hold NaN or infinity");
  }
  const auto count = static_cast<Eigen::Index>(rows.size() / static_cast<std::size_t>(features_));
  matrix x(count, features_ + 1);
  x.leftCols(features_) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(rows.data(), count, features_).cast<double>();
  x.col(features_).setOnes();
  Eigen::Map<matrix> g(gram_.data(), features_ + 1, features_ + 1);
  g.noalias() += x.transpose() * x;
  rows_ += count;
}

refit_result refit_after_cut(const input_gram& gram, std::span<const float> weight, std::span<const float> bias, std::int64_t outputs,
                             std::span<const std::int64_t> kept, const refit_options& options) {
  const std::int64_t f = gram.features();
  if (outputs < 1 || weight.size() != static_cast<std::size_t>(f * outputs) || (!bias.empty() && bias.size() != static_cast<std::size_t>(outputs))) {
    throw error(errc::invalid_argument, "refit_after_cut: weight must be [" + std::to_string(f) + ", outputs] and bias [outputs]");
  }
  if (gram.rows() == 0) throw error(errc::invalid_argument, "refit_after_cut: no calibration rows");
  check_kept(kept, f);

  // Augmented with the constant input: w~ = [W; b], kept~ = kept + the constant.
  matrix w(f + 1, outputs);
  w.topRows(f) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(weight.data(), f, outputs).cast<double>();
  for (std::int64_t j = 0; j < outputs; ++j) w(f, j) = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(j)];
  std::vector<std::int64_t> rows(kept.begin(), kept.end());
  rows.push_back(f);
  const auto k = static_cast<Eigen::Index>(rows.size());

  const matrix g = moments_matrix(gram);
  matrix kept_gram(k, k), cross(k, outputs), cut(k, outputs);
  const matrix g_w = g * w;
  for (Eigen::Index a = 0; a < k; ++a) {
    for (Eigen::Index b = 0; b < k; ++b) kept_gram(a, b) = g(rows[a], rows[b]);
    cross.row(a) = g_w.row(rows[a]);
    cut.row(a) = w.row(rows[a]);
  }
  const double total = (w.array() * g_w.array()).sum();

  // Ridge on the kept inputs only: the bias stays free to take the removed inputs' mean.
  matrix system = kept_gram;
  const double lambda = options.relative_ridge * std::max(system.diagonal().head(k - 1).mean(), 1e-12);
  for (Eigen::Index a = 0; a + 1 < k; ++a) system(a, a) += lambda;
  const Eigen::LLT<matrix> llt(system);
  if (llt.info() != Eigen::Success) throw error(errc::invalid_argument, "refit_after_cut: the calibration moments are not positive definite");
  const matrix refit = llt.solve(cross);

  refit_result r;
  const double scale = total > 0.0 ? total : 1.0;
  r.relative_error_cut = squared_error(cut, cross, kept_gram, total) / scale;
  r.relative_error_refit = squared_error(refit, cross, kept_gram, total) / scale;
  r.weight.resize(static_cast<std::size_t>((k - 1) * outputs));
  for (Eigen::Index a = 0; a + 1 < k; ++a) {
    for (std::int64_t j = 0; j < outputs; ++j) r.weight[static_cast<std::size_t>(a * outputs + j)] = static_cast<float>(refit(a, j));
  }
  r.bias.resize(static_cast<std::size_t>(outputs));
  for (std::int64_t j = 0; j < outputs; ++j) r.bias[static_cast<std::size_t>(j)] = static_cast<float>(refit(k - 1, j));
  return r;
}

}  // namespace inferopt::prune
