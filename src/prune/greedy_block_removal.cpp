// greedy_block_removal (greedy_block_removal.hpp).

#include "greedy_block_removal.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <limits>
#include <numeric>

#include "inferopt/core/error.hpp"

namespace inferopt::prune {
namespace {

using matrix = greedy_block_removal::matrix;

/// `m` without rows (and, when `square`, columns) first..first+count.
matrix without_range(const matrix& m, Eigen::Index first, Eigen::Index count, bool square) {
  const Eigen::Index tail = m.rows() - first - count;
  const Eigen::Index cols = square ? m.cols() - count : m.cols();
  matrix out(m.rows() - count, cols);
  if (!square) {
    out.topRows(first) = m.topRows(first);
    out.bottomRows(tail) = m.bottomRows(tail);
    return out;
  }
  out.topLeftCorner(first, first) = m.topLeftCorner(first, first);
  out.topRightCorner(first, tail) = m.topRightCorner(first, tail);
  out.bottomLeftCorner(tail, first) = m.bottomLeftCorner(tail, first);
  out.bottomRightCorner(tail, tail) = m.bottomRightCorner(tail, tail);
  return out;
}

}  // namespace

greedy_block_removal::greedy_block_removal(const matrix& damped, const matrix& target, const matrix& start, std::int64_t k,
                                           std::int64_t block_rows, std::int64_t block_cols, double lambda)
    : damped_(damped), target_(target), start_(start), k_(k), block_rows_(block_rows), row_groups_((k + block_rows - 1) / block_rows),
      lambda_(lambda) {
  const Eigen::LLT<matrix> factor(damped_);
  if (factor.info() != Eigen::Success) throw error(errc::invalid_argument, "block sparsity: the calibration moments are not positive definite");
  const matrix inverse = factor.solve(matrix::Identity(damped_.rows(), damped_.cols()));
  const matrix dense = factor.solve(target_);
  for (std::int64_t first = 0; first < target_.cols(); first += block_cols) {
    const std::int64_t count = std::min<std::int64_t>(block_cols, target_.cols() - first);
    column_order o = remove_all(inverse, first, count);
    const auto s = start_.middleCols(first, count);
    // || X' S - Y ||^2 - || Y ||^2 with the undamped moments: the damped ones less lambda on the inputs.
    o.start_value = (s.array() * (damped_ * s - 2.0 * target_.middleCols(first, count)).array()).sum() -
                    lambda_ * s.topRows(k_).squaredNorm();
    o.explained = (dense.middleCols(first, count).array() * target_.middleCols(first, count).array()).sum();
    columns_.push_back(std::move(o));
  }
}

std::vector<std::int64_t> greedy_block_removal::group_rows(std::int64_t g) const {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(std::min(k_, (g + 1) * block_rows_) - g * block_rows_));
  std::iota(rows.begin(), rows.end(), g * block_rows_);
  return rows;
}

greedy_block_removal::column_order greedy_block_removal::remove_all(const matrix& inverse, std::int64_t first, std::int64_t count) const {
  column_order o{first, count, 0.0, 0.0, {}, {}, {}};
  const Eigen::Index fixed = damped_.rows() - k_;  // the constant's rows, last and always kept
  matrix h = inverse;                               // the inverse moments over the kept rows
  matrix w = h * target_.middleCols(first, count);  // the optimum over the kept rows
  std::vector<char> gone(static_cast<std::size_t>(row_groups_), 0);
  double added = 0.0;
  const auto record = [&] {
    o.damped_added.push_back(added);
    o.weight_norm.push_back(w.topRows(w.rows() - fixed).squaredNorm());
  };
  record();
  for (std::int64_t step = 0; step < row_groups_; ++step) {
    std::int64_t best = -1;
    double best_cost = std::numeric_limits<double>::infinity();
    Eigen::Index position = 0, best_position = 0;  // a group's first row among the kept ones
    for (std::int64_t g = 0; g < row_groups_; ++g) {
      const Eigen::Index size = std::min(k_, (g + 1) * block_rows_) - g * block_rows_;
      if (gone[static_cast<std::size_t>(g)]) continue;
      const Eigen::LLT<matrix> hg(h.block(position, position, size, size));
      const double cost = (w.middleRows(position, size).array() * hg.solve(w.middleRows(position, size)).array()).sum();
      if (cost < best_cost) best = g, best_cost = cost, best_position = position;
      position += size;
    }
    const Eigen::Index size = std::min(k_, (best + 1) * block_rows_) - best * block_rows_;
    const Eigen::LLT<matrix> hg(h.block(best_position, best_position, size, size));
    const matrix through = h.middleCols(best_position, size);  // the removed rows' inverse columns
    w.noalias() -= through * hg.solve(w.middleRows(best_position, size));
    h.noalias() -= through * hg.solve(through.transpose());
    w = without_range(w, best_position, size, false);
    h = without_range(h, best_position, size, true);
    gone[static_cast<std::size_t>(best)] = 1;
    o.groups.push_back(best);
    added += std::max(best_cost, 0.0);
    record();
  }
  return o;
}

std::vector<std::int64_t> greedy_block_removal::spread(std::int64_t count) const {
  std::vector<std::int64_t> removals(columns_.size(), 0);
  for (std::int64_t step = 0; step < count; ++step) {
    std::size_t best = columns_.size();
    double best_cost = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const auto t = static_cast<std::size_t>(removals[c]);
      if (t + 1 >= columns_[c].damped_added.size()) continue;
      const double cost = columns_[c].damped_added[t + 1] - columns_[c].damped_added[t];
      if (cost < best_cost) best = c, best_cost = cost;
    }
    if (best == columns_.size()) break;
    ++removals[best];
  }
  return removals;
}

double greedy_block_removal::error_less_energy(const std::vector<std::int64_t>& removals) const {
  // Along a removal order the damped value is its dense optimum's (energy - explained) plus
  // what the removals added.
  double value = 0.0;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const column_order& o = columns_[c];
    const auto t = static_cast<std::size_t>(removals[c]);
    value += t == 0 ? o.start_value : o.damped_added[t] - o.explained - lambda_ * o.weight_norm[t];
  }
  return value;
}

greedy_block_removal::matrix greedy_block_removal::weights(const std::vector<std::int64_t>& removals) const {
  matrix w = start_;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (removals[c] == 0) continue;
    w.middleCols(columns_[c].first, columns_[c].count).setZero();
    std::vector<char> removed(static_cast<std::size_t>(k_), 0);
    for (std::int64_t t = 0; t < removals[c]; ++t) {
      for (std::int64_t i : group_rows(columns_[c].groups[static_cast<std::size_t>(t)])) removed[static_cast<std::size_t>(i)] = 1;
    }
    std::vector<Eigen::Index> kept;
    for (Eigen::Index i = 0; i < damped_.rows(); ++i) {
      if (i >= k_ || !removed[static_cast<std::size_t>(i)]) kept.push_back(i);
    }
    if (kept.empty()) continue;
    const Eigen::LLT<matrix> factor(damped_(kept, kept));
    const matrix solved = factor.solve(target_(kept, Eigen::seqN(columns_[c].first, columns_[c].count)));
    w(kept, Eigen::seqN(columns_[c].first, columns_[c].count)) = solved;
  }
  return w;
}

}  // namespace inferopt::prune
