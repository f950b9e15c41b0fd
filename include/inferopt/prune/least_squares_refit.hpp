#pragma once
/// Least-squares refit of a linear layer after some of its inputs are cut.
///
/// When pruning removes channels of a tensor, the linear layer that reads it loses those input
/// rows. Cutting alone drops their contribution; without retraining, the layer can still be
/// refit to what it computed before, from calibration activations X (one row per token or
/// pixel): minimise || X_K W' + b' - (X W + b) ||^2 + lambda ||W'||^2 over the kept rows K.
/// Its normal equations only need the second moments G = [X 1]^T [X 1], gathered batch by
/// batch (memory: features^2 doubles, whatever the number of rows), so the removed inputs'
/// mean contribution moves into the bias and their correlated part into the kept rows
/// (Kwon et al. 2022, least-squares mask tuning; the same normal equations as SparseGPT's
/// Hessian X^T X).

#include <cstdint>
#include <span>
#include <vector>

namespace inferopt::prune {

/// Second moments of a layer input with an appended constant 1: [X 1]^T [X 1], in double.
class input_gram {
 public:
  /// @throws error(errc::invalid_argument) for features < 1.
  explicit input_gram(std::int64_t features);

  /// Adds `rows` (row-major, a multiple of features() values; rows with a non-finite value
  /// are refused).
  /// @throws error(errc::invalid_argument) when the size is not a multiple, or for NaN / inf.
  void add(std::span<const float> rows);

  [[nodiscard]] std::int64_t features() const noexcept { return features_; }
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  /// Entry (i, j) of the (features + 1)^2 matrix; index features() is the constant.
  [[nodiscard]] double at(std::int64_t i, std::int64_t j) const { return gram_[static_cast<std::size_t>(i * (features_ + 1) + j)]; }

 private:
  std::int64_t features_ = 0;
  std::int64_t rows_ = 0;
  std::vector<double> gram_;  ///< upper triangle filled while adding; mirrored on read
};

struct refit_options {
  /// Ridge lambda relative to the mean diagonal of the kept rows' moments: keeps the solve
  /// stable when kept inputs are nearly collinear (few calibration rows, dead channels).
  double relative_ridge = 1e-4;
};

struct refit_result {
  std::vector<float> weight;  ///< [kept.size(), outputs], row-major (a MatMul's B)
  std::vector<float> bias;    ///< [outputs]
  /// || cut output - original ||^2 / || original ||^2 on the calibration rows, for the plain
  /// cut (kept rows of W, bias unchanged) and after the refit.
  double relative_error_cut = 0.0;
  double relative_error_refit = 0.0;
};

/// Refits `weight` ([gram.features(), outputs], row-major) and `bias` ([outputs], empty: zero)
/// to the kept input rows `kept` (ascending, distinct, each < features()).
/// @throws error(errc::invalid_argument) for sizes that do not match, bad `kept`, no
///         calibration rows, or a system the ridge cannot make positive definite.
[[nodiscard]] refit_result refit_after_cut(const input_gram& gram, std::span<const float> weight, std::span<const float> bias,
                                           std::int64_t outputs, std::span<const std::int64_t> kept,
                                           const refit_options& options = {});

}  // namespace inferopt::prune
