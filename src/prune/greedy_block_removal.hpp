#pragma once
// Block sparsity by greedy exact removal (Optimal Brain Compression, Frantar, Singh & Alistarh
// 2022, with whole r x c blocks instead of single weights): inside each block column (the c
// outputs that share a mask), blocks go one at a time, each the one whose removal adds the
// least output error once every other kept weight of those outputs is refit to the optimum.
//
// For outputs J with kept input rows R, the optimum is W_R = S_RR^-1 T_R (S the damped input
// moments, T the target). Removing row group g from it adds
//   tr(W_g^T (S_RR^-1)_gg^-1 W_g)
// to the objective, and the inverse over R \ g is S_RR^-1 less a rank-|g| term, so a column's
// whole removal order costs |g| D^2 per step. SparseGPT's single pass over the rows
// (calibrated_block_sparsity.cpp) lets a removal be made up for only by the rows after it;
// here every kept row takes part, and the columns share a layer's removals where their
// measured costs are lowest.

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace inferopt::prune {

class greedy_block_removal {
 public:
  using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

  /// `damped`: the D x D damped moments, D >= `k`; rows k.. (the bias's constant) are never
  /// removed. `target`: D x N. `lambda`: the damping added to the first k diagonal entries
  /// (to report the undamped error). `start`: D x N, the weights of a block column that loses
  /// nothing. Runs every column's whole removal order.
  greedy_block_removal(const matrix& damped, const matrix& target, const matrix& start, std::int64_t k, std::int64_t block_rows,
                       std::int64_t block_cols, double lambda);

  [[nodiscard]] std::int64_t blocks_total() const { return row_groups_ * static_cast<std::int64_t>(columns_.size()); }

  /// How many blocks each block column loses when the layer loses `count`: step by step, the
  /// column whose next removal adds the least.
  [[nodiscard]] std::vector<std::int64_t> spread(std::int64_t count) const;

  /// The undamped objective (the output error) when the columns lose `removals` (from
  /// spread), less the target's energy: the error table's entry, without solving. The damped
  /// objective's value is known along each removal order, and the damping's part of it is
  /// lambda times the kept weights' squared norm.
  [[nodiscard]] double error_less_energy(const std::vector<std::int64_t>& removals) const;

  /// The weights [D, N] after the columns lose `removals`: the optimum over each column's kept
  /// rows, removed blocks exactly zero; `start`'s where a column loses nothing.
  [[nodiscard]] matrix weights(const std::vector<std::int64_t>& removals) const;

 private:
  struct column_order {
    std::int64_t first = 0, count = 0;   ///< the outputs
    double start_value = 0.0;            ///< the output error of start's columns, less their energy
    double explained = 0.0;              ///< <W0, T> over the columns, W0 the dense damped optimum
    std::vector<std::int64_t> groups;    ///< row groups in the order they go
    std::vector<double> damped_added;    ///< damped objective added after t removals (t = 0..)
    std::vector<double> weight_norm;     ///< the kept input rows' squared norm after t removals
  };

  [[nodiscard]] std::vector<std::int64_t> group_rows(std::int64_t g) const;
  [[nodiscard]] column_order remove_all(const matrix& inverse, std::int64_t first, std::int64_t count) const;

  matrix damped_;
  matrix target_;
  matrix start_;
  std::int64_t k_ = 0, block_rows_ = 0, row_groups_ = 0;
  double lambda_ = 0.0;
  std::vector<column_order> columns_;
};

}  // namespace inferopt::prune
