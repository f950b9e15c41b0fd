#pragma once
// An input_gram's moments as a dense Eigen matrix, for the solvers that factor it.

#include <Eigen/Core>
#include <algorithm>

#include "inferopt/prune/least_squares_refit.hpp"

namespace inferopt::prune {

using dense_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

/// The (features + 1)^2 moments [X 1]^T [X 1]; index features() is the constant.
inline dense_matrix moments_matrix(const input_gram& gram) {
  const std::int64_t f = gram.features();
  dense_matrix g(f + 1, f + 1);
  for (std::int64_t i = 0; i <= f; ++i) {
    for (std::int64_t j = 0; j <= f; ++j) g(i, j) = gram.at(i, j);
  }
  return g;
}

/// The ridge damped_moments adds: `relative_ridge` times the mean of the first `inputs`
/// diagonal entries.
inline double moments_ridge(const dense_matrix& moments, double relative_ridge, std::int64_t inputs) {
  return relative_ridge * std::max(moments.diagonal().head(inputs).mean(), 1e-12);
}

/// `moments` with `relative_ridge` times the mean of its first `inputs` diagonal entries added
/// to them (the constant stays unridged): positive definite even with dead or collinear inputs.
inline dense_matrix damped_moments(dense_matrix moments, double relative_ridge, std::int64_t inputs) {
  const double lambda = moments_ridge(moments, relative_ridge, inputs);
  for (std::int64_t i = 0; i < inputs; ++i) moments(i, i) += lambda;
  return moments;
}

/// An input_gram's moments, damped on the inputs.
inline dense_matrix ridged_moments_matrix(const input_gram& gram, double relative_ridge) {
  return damped_moments(moments_matrix(gram), relative_ridge, gram.features());
}

}  // namespace inferopt::prune
