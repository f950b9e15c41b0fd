#pragma once
// The moments of one value as a changed model computes it (X') against the original (X): what
// the sequential refits of pruning and block sparsity solve from, so that each layer also
// corrects the error that reaches it from the layers changed before it.

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "gram_matrix.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// [X' 1]^T [X' 1], [X' 1]^T [X 1] and [X 1]^T [X 1], X' with `changed_k` features (fewer than
/// X's `k` where pruning cut the value) and the constant 1 appended to both.
struct paired_moments {
  dense_matrix seen, cross, original;
  /// With a residual R the layer's output is added to: D = R - R' (the original's minus the
  /// changed model's), [X' 1]^T D, [X 1]^T D and || D ||^2; empty without.
  dense_matrix seen_delta, original_delta;
  double delta_energy = 0.0;
  std::vector<float> delta;  ///< the current batch's D, set before add

  paired_moments(std::int64_t changed_k, std::int64_t k)
      : seen(dense_matrix::Zero(changed_k + 1, changed_k + 1)),
        cross(dense_matrix::Zero(changed_k + 1, k + 1)),
        original(dense_matrix::Zero(k + 1, k + 1)) {}

  /// With a residual, aims a layer at X W + b + R instead of X W + b: R - R' joins its target
  /// [X' 1]^T [X 1] W and the cross term and || R - R' ||^2 its energy || X W ||^2 (W bias last;
  /// target and W may use only the first rows of the moments). Nothing without a residual.
  /// @throws error(errc::invalid_argument) for a residual of another width than W's outputs.
  template <class Weight, class Target>
  void aim_at_residual_sum(const Weight& w, Target& target, double& energy) const {
    if (seen_delta.size() == 0) return;
    if (seen_delta.cols() != w.cols()) throw error(errc::invalid_argument, "a residual is not as wide as the layer's output");
    target += seen_delta.topRows(target.rows());
    energy += 2.0 * (w.array() * original_delta.topRows(w.rows()).array()).sum() + delta_energy;
  }

  void add(const std::vector<float>& changed, const std::vector<float>& unchanged) {
    const auto rows = static_cast<Eigen::Index>(unchanged.size()) / (original.rows() - 1);
    const auto augmented = [&](const std::vector<float>& v, Eigen::Index k) {
      dense_matrix x(rows, k + 1);
      x.leftCols(k) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(v.data(), rows, k).cast<double>();
      x.col(k).setOnes();
      return x;
    };
    const dense_matrix a = augmented(changed, seen.rows() - 1), b = augmented(unchanged, original.rows() - 1);
    seen.noalias() += a.transpose() * a;
    cross.noalias() += a.transpose() * b;
    original.noalias() += b.transpose() * b;
    if (delta.empty()) return;
    const auto n = static_cast<Eigen::Index>(delta.size()) / rows;
    const dense_matrix d = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(delta.data(), rows, n).cast<double>();
    if (seen_delta.size() == 0) {
      seen_delta = dense_matrix::Zero(seen.rows(), n);
      original_delta = dense_matrix::Zero(original.rows(), n);
    }
    seen_delta.noalias() += a.transpose() * d;
    original_delta.noalias() += b.transpose() * d;
    delta_energy += d.squaredNorm();
  }
};

/// The value `name` as each batch makes it in `original` (k features) and in `current`
/// (changed_k), accumulated.
/// @throws error(errc::invalid_argument) for activations of another size, or NaN / infinity.
inline paired_moments gather_paired(const ir::model& original, const ir::model& current, const std::string& name,
                                    std::int64_t changed_k, std::int64_t k, std::span<const runtime::tensor_map> batches,
                                    const std::string& residual = {}) {
  std::vector<float> captured, residual_values;
  runtime::session_options o;
  o.on_value = [&](std::string_view v, const runtime::tensor& t) {
    if (v == name) captured = t.to_float();
    if (!residual.empty() && v == residual) residual_values = t.to_float();
  };
  runtime::session before(original, o), after(current, o);
  paired_moments p(changed_k, k);
  for (const runtime::tensor_map& feed : batches) {
    const auto capture = [&](runtime::session& s, std::int64_t features) {
      captured.clear();
      if (const auto it = feed.find(name); it != feed.end()) captured = it->second.to_float();  // a graph input
      if (const auto it = feed.find(residual); !residual.empty() && it != feed.end()) residual_values = it->second.to_float();
      (void)s.run(feed);
      if (captured.empty() || captured.size() % static_cast<std::size_t>(features) != 0) {
        throw error(errc::invalid_argument, "calibration activation '" + name + "' does not have the analysed shape");
      }
      return std::move(captured);
    };
    residual_values.clear();
    const std::vector<float> x = capture(before, k);
    const std::vector<float> r = residual_values;
    residual_values.clear();
    const std::vector<float> changed = capture(after, changed_k);
    if (!residual.empty()) {
      if (r.empty() || r.size() != residual_values.size()) throw error(errc::invalid_argument, "residual '" + residual + "' changed size");
      p.delta.resize(r.size());
      for (std::size_t i = 0; i < r.size(); ++i) p.delta[i] = r[i] - residual_values[i];
    }
    if (changed.size() / static_cast<std::size_t>(changed_k) != x.size() / static_cast<std::size_t>(k)) {
      throw error(errc::invalid_argument, "calibration activation '" + name + "' has other rows in the changed model");
    }
    if (!std::all_of(changed.begin(), changed.end(), [](float v) { return std::isfinite(v); })) {
      throw error(errc::invalid_argument, "calibration activations of the changed model hold NaN or infinity");
    }
    p.add(changed, x);
  }
  return p;
}

}  // namespace inferopt::prune
