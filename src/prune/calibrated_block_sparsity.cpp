// sparsify_blocks_calibrated / apply_calibrated_block_sparsity (calibrated_block_sparsity.hpp).

#include "inferopt/prune/calibrated_block_sparsity.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "gram_matrix.hpp"
#include "greedy_block_removal.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "linear_weight.hpp"
#include "observe_inputs.hpp"
#include "output_cosine.hpp"
#include "paired_moments.hpp"

namespace inferopt::prune {
namespace {

using rows_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The block grid of a [K, N] weight (edge blocks may be partial).
struct block_grid {
  std::int64_t rows = 0, cols = 0, block_rows = 0, block_cols = 0;
  [[nodiscard]] std::int64_t row_blocks() const { return (rows + block_rows - 1) / block_rows; }
  [[nodiscard]] std::int64_t col_blocks() const { return (cols + block_cols - 1) / block_cols; }
  [[nodiscard]] std::int64_t count() const { return row_blocks() * col_blocks(); }
};

/// Calls `visit(i, j)` for each entry of block (rb, cb).
template <class Visit>
void for_each_entry(const block_grid& grid, std::int64_t rb, std::int64_t cb, Visit visit) {
  for (std::int64_t i = rb * grid.block_rows; i < std::min(grid.rows, (rb + 1) * grid.block_rows); ++i) {
    for (std::int64_t j = cb * grid.block_cols; j < std::min(grid.cols, (cb + 1) * grid.block_cols); ++j) visit(i, j);
  }
}

/// The sum over block (rb, cb) of `entry(i, j)`.
template <class Entry>
double block_sum(const block_grid& grid, std::int64_t rb, std::int64_t cb, Entry entry) {
  double sum = 0.0;
  for_each_entry(grid, rb, cb, [&](std::int64_t i, std::int64_t j) { sum += entry(i, j); });
  return sum;
}

/// The `count` blocks of `first_rb`..`last_rb` with the lowest `score`, as row-block-major indices.
template <class Score>
std::vector<std::int64_t> lowest_blocks(const block_grid& grid, std::int64_t first_rb, std::int64_t last_rb, std::int64_t count, Score score) {
  std::vector<std::pair<double, std::int64_t>> ranked;
  for (std::int64_t rb = first_rb; rb < last_rb; ++rb) {
    for (std::int64_t cb = 0; cb < grid.col_blocks(); ++cb) ranked.emplace_back(score(rb, cb), rb * grid.col_blocks() + cb);
  }
  count = std::min<std::int64_t>(count, static_cast<std::int64_t>(ranked.size()));
  std::partial_sort(ranked.begin(), ranked.begin() + count, ranked.end());
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < count; ++i) out.push_back(ranked[static_cast<std::size_t>(i)].second);
  return out;
}

/// The upper Cholesky factor U of H^-1 (H^-1 = U^T U), H the damped moments of the rows kept in play.
rows_matrix inverse_cholesky(const dense_matrix& damped) {
  const Eigen::LLT<dense_matrix> h(damped);
  if (h.info() != Eigen::Success) throw error(errc::invalid_argument, "block sparsity: the calibration moments are not positive definite");
  const dense_matrix inverse = h.solve(dense_matrix::Identity(damped.rows(), damped.cols()));
  const Eigen::LLT<dense_matrix> factor(inverse);
  if (factor.info() != Eigen::Success) throw error(errc::invalid_argument, "block sparsity: the inverse moments are not positive definite");
  return factor.matrixU();
}

/// Removes the blocks `mask` marks in rows first..last of `w`, each by the OBS step, and
/// carries the compensation into the rows after them.
void remove_chunk(rows_matrix& w, const rows_matrix& u, const block_grid& grid, const std::vector<char>& mask, std::int64_t first,
                  std::int64_t last) {
  const Eigen::Index d = w.rows(), n = w.cols();
  rows_matrix errors = rows_matrix::Zero(last - first, n);
  for (std::int64_t i = first; i < last; ++i) {
    const std::int64_t rb = i / grid.block_rows;
    for (std::int64_t j = 0; j < n; ++j) {
      if (mask[static_cast<std::size_t>(rb * grid.col_blocks() + j / grid.block_cols)]) errors(i - first, j) = w(i, j) / u(i, i);
    }
    const auto e = errors.row(i - first);
    w.block(i, 0, last - i, n).noalias() -= u.block(i, i, 1, last - i).transpose() * e;
    for (std::int64_t j = 0; j < n; ++j) {
      if (errors(i - first, j) != 0.0) w(i, j) = 0.0;  // exactly: a removed block holds no rounding residue
    }
  }
  if (last < d) w.bottomRows(d - last).noalias() -= u.block(first, last, last - first, d - last).transpose() * errors;
}

void check_options(const block_sparsity_options& o) {
  if (o.block_rows < 1 || o.block_cols < 1) throw error(errc::invalid_argument, "block sparsity: block extents must be at least 1");
  if (!(o.sparsity >= 0.0 && o.sparsity <= 1.0)) throw error(errc::invalid_argument, "block sparsity: sparsity must be in [0, 1]");
  if (o.chunk_rows < 1) throw error(errc::invalid_argument, "block sparsity: chunk_rows must be at least 1");
  if (!(o.relative_damping > 0.0)) throw error(errc::invalid_argument, "block sparsity: relative_damping must be positive");
  if (!(o.max_layer_sparsity >= 0.0 && o.max_layer_sparsity <= 1.0)) throw error(errc::invalid_argument, "block sparsity: max_layer_sparsity must be in [0, 1]");
}

/// What a layer's output is judged by: || X' W' - X W ||^2 over the calibration rows, X the
/// layer's input in the original model and X' in the model as changed so far (X' = X before
/// anything changes), both with the constant 1 when the layer has a bias (D = K + 1, else K):
/// seen = [X' 1]^T [X' 1] (D x D), target = [X' 1]^T [X 1] W (D x N), energy = || X W ||^2.
struct layer_objective {
  dense_matrix seen;
  rows_matrix target;
  double energy = 0.0;

  [[nodiscard]] double relative_error(const rows_matrix& w) const {
    return relative(energy - 2.0 * (w.array() * target.array()).sum() + (w.array() * (seen * w).array()).sum());
  }

  /// An error value of this objective (rounding may take it below zero) over the energy.
  [[nodiscard]] double relative(double error) const { return std::max(error, 0.0) / (energy > 0.0 ? energy : 1.0); }
};

/// The layer's weight with its bias as the last row, [D, N].
rows_matrix augmented_weight(std::span<const float> weight, std::span<const float> bias, std::int64_t k, std::int64_t outputs) {
  if (outputs < 1 || weight.size() != static_cast<std::size_t>(k * outputs) || (!bias.empty() && bias.size() != static_cast<std::size_t>(outputs))) {
    throw error(errc::invalid_argument, "block sparsity: weight must be [" + std::to_string(k) + ", outputs] and bias [outputs]");
  }
  rows_matrix w(bias.empty() ? k : k + 1, outputs);
  w.topRows(k) = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(weight.data(), k, outputs).cast<double>();
  if (!bias.empty()) w.row(k) = Eigen::Map<const Eigen::RowVectorXf>(bias.data(), outputs).cast<double>();
  return w;
}

/// The objective of a layer whose input has not changed: X' = X.
layer_objective unchanged_input_objective(const input_gram& gram, const rows_matrix& w) {
  if (gram.rows() == 0) throw error(errc::invalid_argument, "block sparsity: no calibration rows");
  layer_objective o;
  o.seen = moments_matrix(gram).topLeftCorner(w.rows(), w.rows());
  o.target = o.seen * w;
  o.energy = (w.array() * o.target.array()).sum();
  return o;
}

/// The objective of a layer whose input has changed (X' against X), from their paired moments;
/// with a residual R' in them, towards X W + b + R (R - R' joins the target).
layer_objective changed_input_objective(const paired_moments& p, const rows_matrix& w) {
  const Eigen::Index d = w.rows();
  layer_objective o;
  o.seen = p.seen.topLeftCorner(d, d);
  o.target = p.cross.topLeftCorner(d, d) * w;
  o.energy = (w.array() * (p.original.topLeftCorner(d, d) * w).array()).sum();
  p.aim_at_residual_sum(w, o.target, o.energy);
  return o;
}

/// One layer's problem, prepared once (the factorisation costs D^3) and solved at any sparsity
/// (D^2 N each). With `refit_start` the blocks are removed from the least-squares optimum for
/// the objective (the input has changed) instead of from the layer's own weights.
class block_solver {
 public:
  block_solver(layer_objective objective, rows_matrix original, bool refit_start, std::int64_t k, const block_sparsity_options& options)
      : options_(options), k_(k), objective_(std::move(objective)), original_(std::move(original)) {
    const dense_matrix damped = damped_moments(objective_.seen, options.relative_damping, k);
    grid_ = {k_, original_.cols(), options.block_rows, options.block_cols};
    start_ = original_;
    if (refit_start) {
      // The damping can make the refit worse than the weights as they are, where little changed.
      rows_matrix refit = damped.llt().solve(dense_matrix(objective_.target));
      if (objective_.relative_error(refit) < objective_.relative_error(original_)) start_ = std::move(refit);
    }
    if (options.greedy) {
      greedy_ = std::make_unique<greedy_block_removal>(damped, dense_matrix(objective_.target), dense_matrix(start_), k, options.block_rows,
                                                       options.block_cols, moments_ridge(objective_.seen, options.relative_damping, k));
    } else {
      u_ = inverse_cholesky(damped);
    }
  }

  /// The layer with round(sparsity * blocks) blocks removed; `magnitude`: also the error of
  /// removing as many by l2 norm.
  [[nodiscard]] block_sparsity_result solve(double sparsity, bool magnitude = true) const {
    block_sparsity_result r;
    r.blocks_total = grid_.count();
    r.blocks_removed = std::llround(sparsity * static_cast<double>(r.blocks_total));
    if (magnitude) r.relative_error_magnitude = magnitude_error(r.blocks_removed);
    const rows_matrix w = greedy_ ? rows_matrix(greedy_->weights(greedy_->spread(r.blocks_removed))) : updated(r.blocks_removed);
    r.relative_error = objective_.relative_error(w);
    r.weight.resize(static_cast<std::size_t>(k_ * grid_.cols));
    Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(r.weight.data(), k_, grid_.cols) =
        w.topRows(k_).cast<float>();
    if (original_.rows() > k_) {
      r.bias.resize(static_cast<std::size_t>(grid_.cols));
      for (std::int64_t j = 0; j < grid_.cols; ++j) r.bias[static_cast<std::size_t>(j)] = static_cast<float>(w(k_, j));
    }
    return r;
  }

  /// The relative output error at `sparsity`, as solve reports it; the greedy order predicts it
  /// without solving.
  [[nodiscard]] double relative_error(double sparsity) const {
    if (!greedy_) return solve(sparsity, false).relative_error;
    const auto count = std::llround(sparsity * static_cast<double>(grid_.count()));
    return objective_.relative(objective_.energy + greedy_->error_less_energy(greedy_->spread(count)));
  }

 private:
  /// The error of removing `count` blocks by l2 norm, nothing updated.
  [[nodiscard]] double magnitude_error(std::int64_t count) const {
    rows_matrix cut = original_;
    for (std::int64_t b : lowest_blocks(grid_, 0, grid_.row_blocks(), count, [&](std::int64_t rb, std::int64_t cb) {
           return block_sum(grid_, rb, cb, [&](std::int64_t i, std::int64_t j) { return original_(i, j) * original_(i, j); });
         })) {
      for_each_entry(grid_, b / grid_.col_blocks(), b % grid_.col_blocks(), [&](std::int64_t i, std::int64_t j) { cut(i, j) = 0.0; });
    }
    return objective_.relative_error(cut);
  }

  /// The weights (bias last) after removing `count` blocks chunk by chunk.
  [[nodiscard]] rows_matrix updated(std::int64_t count) const {
    rows_matrix w = start_;
    std::vector<char> mask(static_cast<std::size_t>(grid_.count()), 0);
    const std::int64_t chunk = std::max<std::int64_t>(1, (options_.chunk_rows + grid_.block_rows - 1) / grid_.block_rows);
    std::int64_t removed = 0;
    for (std::int64_t rb0 = 0; rb0 < grid_.row_blocks(); rb0 += chunk) {
      const std::int64_t rb1 = std::min(grid_.row_blocks(), rb0 + chunk);
      const std::int64_t due = count * rb1 / grid_.row_blocks();  // the chunks' share so far
      for (std::int64_t b : lowest_blocks(grid_, rb0, rb1, due - removed, [&](std::int64_t rb, std::int64_t cb) {
             return block_sum(grid_, rb, cb, [&](std::int64_t i, std::int64_t j) { return w(i, j) * w(i, j) / (u_(i, i) * u_(i, i)); });
           })) {
        mask[static_cast<std::size_t>(b)] = 1;
      }
      removed = due;
      remove_chunk(w, u_, grid_, mask, rb0 * grid_.block_rows, std::min(k_, rb1 * grid_.block_rows));
    }
    return w;
  }

  block_sparsity_options options_;
  std::int64_t k_ = 0;
  layer_objective objective_;
  rows_matrix original_;  ///< the layer's weights, bias last
  rows_matrix start_;     ///< where removal starts: original_, or the refit to the changed input
  rows_matrix u_;
  block_grid grid_;
  std::unique_ptr<greedy_block_removal> greedy_;  ///< with options.greedy, instead of u_
};

/// The solver of a layer whose input has not changed.
block_solver unchanged_input_solver(const input_gram& gram, std::span<const float> weight, std::span<const float> bias,
                                    std::int64_t outputs, const block_sparsity_options& options) {
  rows_matrix w = augmented_weight(weight, bias, gram.features(), outputs);
  layer_objective objective = unchanged_input_objective(gram, w);
  return {std::move(objective), std::move(w), false, gram.features(), options};
}

}  // namespace

block_sparsity_result sparsify_blocks_calibrated(const input_gram& gram, std::span<const float> weight, std::span<const float> bias,
                                                 std::int64_t outputs, const block_sparsity_options& options) {
  check_options(options);
  return unchanged_input_solver(gram, weight, bias, outputs, options).solve(options.sparsity);
}

namespace {

/// A layer to sparsify, with what its solve needs.
struct block_job {
  ir::node* node = nullptr;
  bool transposed = false;
  std::int64_t k = 0;
  std::int64_t n = 0;
  std::optional<bias_site> bias;
};

block_job job_of(const ir::model& m, ir::node& n) {
  const auto refuse = [&](const std::string& why) { return error(errc::invalid_argument, "block sparsity: '" + n.label() + "' " + why); };
  if (!n.is("MatMul") && !n.is("Gemm")) throw refuse("is not a MatMul or Gemm");
  if (n.is("Gemm") && (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0F) != 1.0F || n.attr_float("beta", 1.0F) != 1.0F)) {
    throw refuse("is a Gemm with transA, alpha or beta");
  }
  const ir::tensor* w = n.inputs().size() > 1 ? ir::constant_tensor(n.input(1), m.ir_version) : nullptr;
  if (!w || w->dtype != ir::data_type::float32 || w->dims.size() != 2) throw refuse("has no constant 2-D float weight");
  block_job job;
  job.node = &n;
  job.transposed = stores_transposed(n);
  job.k = job.transposed ? w->dims[1] : w->dims[0];
  job.n = job.transposed ? w->dims[0] : w->dims[1];
  job.bias = find_bias(n, job.n, m.ir_version);
  return job;
}

/// Sparsifies the layers in graph order, each on its input as the layers before it left it,
/// towards its output in the original model; `done(job, result)` installs each at once. Layers
/// reading one value (attention's Q, K and V) share a stage.
template <class Done>
void sparsify_in_sequence(ir::model& m, const std::vector<block_job>& jobs, const std::vector<double>& sparsity,
                          std::span<const runtime::tensor_map> batches, const block_sparsity_options& options, Done done) {
  const ir::model original = m.clone();
  std::vector<bool> finished(jobs.size(), false);
  std::vector<const ir::value*> residual_of;
  for (const block_job& j : jobs) {
    residual_of.push_back(options.residual_target ? residual_addend(*j.node, j.bias ? j.bias->owner : nullptr, m.ir_version) : nullptr);
  }
  for (std::size_t first = 0; first < jobs.size(); ++first) {
    if (finished[first]) continue;
    const ir::value* input = jobs[first].node->input(0);
    const ir::value* residual = residual_of[first];
    const paired_moments p = gather_paired(original, m, input->name(), jobs[first].k, jobs[first].k, batches,
                                           residual ? residual->name() : std::string());
    for (std::size_t i = first; i < jobs.size(); ++i) {
      if (finished[i] || jobs[i].node->input(0) != input || residual_of[i] != residual) continue;
      std::int64_t outputs = 0;
      const std::vector<float> weight = weight_rows(*jobs[i].node, jobs[i].transposed, m.ir_version, outputs);
      const std::vector<float> bias = jobs[i].bias ? bias_values(*jobs[i].bias, m.ir_version) : std::vector<float>{};
      rows_matrix w = augmented_weight(weight, bias, jobs[i].k, outputs);
      layer_objective objective = changed_input_objective(p, w);
      done(i, block_solver(std::move(objective), std::move(w), true, jobs[i].k, options).solve(sparsity[i]));
      finished[i] = true;
    }
  }
}

/// Writes a solved layer's weight (and bias, when it has one) into the graph that holds it.
void install(ir::model& m, const block_job& j, const block_sparsity_result& r) {
  ir::graph& g = *j.node->owner();
  store_weight_rows(g, *j.node, j.transposed, r.weight, j.n, "_sparse");
  if (j.bias) store_bias(g, *j.bias, r.bias, m.ir_version, "_sparse");
}

/// The layers as jobs, in graph order. @throws error for a node that is not a layer of `m`'s
/// main graph.
std::vector<block_job> jobs_of(const ir::model& m, const std::vector<const ir::node*>& layers) {
  std::vector<block_job> jobs;
  for (ir::node* n : m.graph().nodes()) {
    if (std::find(layers.begin(), layers.end(), n) != layers.end()) jobs.push_back(job_of(m, *n));
  }
  if (jobs.size() != layers.size()) throw error(errc::invalid_argument, "block sparsity: a layer is not a node of the model's main graph");
  return jobs;
}

/// `visit(job index, solver)` for each job, on the unchanged model's inputs, in passes whose
/// moments take at most `max_gram_bytes`.
template <class Visit>
void for_each_solver(const ir::model& m, const std::vector<block_job>& jobs, std::span<const runtime::tensor_map> batches,
                     const block_sparsity_options& options, std::int64_t max_gram_bytes, Visit visit) {
  std::vector<std::int64_t> bytes;
  for (const block_job& j : jobs) bytes.push_back((j.k + 1) * (j.k + 1) * 8);
  in_passes(bytes, max_gram_bytes, [&](std::size_t first, std::size_t last) {
    std::vector<const ir::value*> inputs;
    std::vector<std::int64_t> features;
    for (std::size_t i = first; i < last; ++i) {
      inputs.push_back(jobs[i].node->input(0));
      features.push_back(jobs[i].k);
    }
    const std::vector<input_gram> grams = input_grams(m, inputs, features, batches);
    for (std::size_t i = first; i < last; ++i) {
      std::int64_t outputs = 0;
      const std::vector<float> weight = weight_rows(*jobs[i].node, jobs[i].transposed, m.ir_version, outputs);
      const std::vector<float> bias = jobs[i].bias ? bias_values(*jobs[i].bias, m.ir_version) : std::vector<float>{};
      visit(i, unchanged_input_solver(grams[i - first], weight, bias, outputs, options));
    }
  });
}

/// `job`'s node in `copy`, a clone of the model `job` was made from (nodes keep their order).
block_job job_in_copy(const ir::model& original, ir::model& copy, const block_job& job) {
  auto at = copy.graph().nodes().begin();
  for (const ir::node* n : original.graph().nodes()) {
    if (n == job.node) break;
    ++at;
  }
  return job_of(copy, **at);
}

/// The drop of the model's first output's mean cosine on `measure` (`reference`: the unchanged
/// model's) with only `job` solved by `s`, at each of `levels`: measured at every other level
/// and the last, linear between them, and never falling as the level rises.
std::vector<double> drops_alone(const ir::model& m, const block_job& job, const block_solver& s, const std::vector<double>& levels,
                                std::span<const runtime::tensor_map> measure, const std::vector<std::vector<float>>& reference) {
  std::vector<double> d(levels.size(), 0.0);
  std::size_t measured = 0;
  for (std::size_t l = 1; l < levels.size(); ++l) {
    if (l % 2 != 0 && l + 1 != levels.size()) continue;
    ir::model probe = m.clone();
    install(probe, job_in_copy(m, probe, job), s.solve(levels[l], false));
    d[l] = std::max(d[measured], mean_cosine_drop(reference, first_outputs(probe, measure)));
    for (std::size_t between = measured + 1; between < l; ++between) {
      d[between] = d[measured] + (d[l] - d[measured]) * (levels[between] - levels[measured]) / (levels[l] - levels[measured]);
    }
    measured = l;
  }
  return d;
}

/// Per job, at each of `levels`: what the allocation can read, each layer alone sparsified.
struct level_tables {
  std::vector<std::vector<double>> relative_error;  ///< the layer's own output error (when asked)
  std::vector<std::vector<double>> cosine_drop;     ///< with options.end_to_end: on the first measure_batches batches
};

level_tables measure_levels(const ir::model& m, const std::vector<block_job>& jobs, std::span<const runtime::tensor_map> batches,
                            const block_sparsity_options& options, std::int64_t max_gram_bytes, const std::vector<double>& levels,
                            bool own_errors) {
  level_tables t{std::vector<std::vector<double>>(jobs.size()), std::vector<std::vector<double>>(jobs.size())};
  const auto measure = batches.first(std::min(batches.size(), std::max<std::size_t>(1, options.measure_batches)));
  const std::vector<std::vector<float>> reference = options.end_to_end ? first_outputs(m, measure) : std::vector<std::vector<float>>{};
  for_each_solver(m, jobs, batches, options, max_gram_bytes, [&](std::size_t i, const block_solver& s) {
    if (own_errors) {
      for (double level : levels) t.relative_error[i].push_back(s.relative_error(level));
    }
    if (options.end_to_end) t.cosine_drop[i] = drops_alone(m, jobs[i], s, levels, measure, reference);
  });
  return t;
}

/// Sparsities a layer may get when they are allocated: sixteenths up to `most`.
std::vector<double> allocation_levels(double most) {
  std::vector<double> out;
  for (int i = 0; i <= 16 && i / 16.0 <= most; ++i) out.push_back(i / 16.0);
  return out;
}

/// What each layer saves at each level: weights removed, or milliseconds when latency-aware.
/// `layer_ms` in the layers' order (empty: pay in weights).
std::vector<std::vector<double>> level_savings(const std::vector<std::int64_t>& weights, const std::vector<double>& levels,
                                               const std::vector<double>& layer_ms, const block_sparsity_options& o) {
  std::vector<std::vector<double>> out(weights.size());
  for (std::size_t l = 0; l < weights.size(); ++l) {
    for (double level : levels) {
      if (layer_ms.empty()) out[l].push_back(static_cast<double>(weights[l]) * level);
      else out[l].push_back(level > 0.0 ? layer_ms[l] * (1.0 - o.time_fraction(level)) : 0.0);
    }
  }
  return out;
}

/// Per layer, the level whose errors cost least for `budget` saved: greedily, the move (one
/// level or several, where the nearer ones save nothing) with the least error added per
/// saving.
std::vector<double> allocate(const std::vector<std::vector<double>>& errors, const std::vector<std::vector<double>>& savings,
                             const std::vector<double>& levels, double budget) {
  std::vector<std::size_t> at(errors.size(), 0);
  double saved = 0.0;
  while (saved < budget) {
    std::size_t best = errors.size(), best_to = 0;
    double best_cost = 0.0;
    for (std::size_t l = 0; l < errors.size(); ++l) {
      for (std::size_t to = at[l] + 1; to < levels.size(); ++to) {
        const double gain = savings[l][to] - savings[l][at[l]];
        if (!(gain > 0.0)) continue;
        const double cost = (errors[l][to] - errors[l][at[l]]) / gain;
        if (best == errors.size() || cost < best_cost) best = l, best_to = to, best_cost = cost;
      }
    }
    if (best == errors.size()) break;
    saved += savings[best][best_to] - savings[best][at[best]];
    at[best] = best_to;
  }
  std::vector<double> out;
  for (std::size_t i : at) out.push_back(levels[i]);
  return out;
}

}  // namespace

std::vector<block_sparsity_layer> apply_calibrated_block_sparsity(ir::model& m, const std::vector<const ir::node*>& layers,
                                                                  std::span<const runtime::tensor_map> batches,
                                                                  const block_sparsity_options& options, std::int64_t max_gram_bytes,
                                                                  std::vector<std::vector<double>>* level_errors) {
  check_options(options);
  if (!options.layer_ms.empty() && (options.layer_ms.size() != layers.size() || !options.time_fraction)) {
    throw error(errc::invalid_argument, "block sparsity: latency-aware allocation needs one time per layer and a time model");
  }
  const std::vector<block_job> jobs = jobs_of(m, layers);

  std::vector<double> sparsity(jobs.size(), options.sparsity), predicted(jobs.size(), 0.0);
  if (options.allocate) {
    const std::vector<double> levels = allocation_levels(options.max_layer_sparsity);
    std::vector<std::vector<double>> errors;
    if (level_errors && level_errors->size() == jobs.size()) {
      errors = *level_errors;
    } else {
      level_tables t = measure_levels(m, jobs, batches, options, max_gram_bytes, levels, !options.end_to_end);
      errors = std::move(options.end_to_end ? t.cosine_drop : t.relative_error);
      if (level_errors) *level_errors = errors;
    }
    std::vector<std::int64_t> weights;
    std::vector<double> job_ms;  // jobs run in graph order, the times come in the caller's
    for (const block_job& j : jobs) {
      weights.push_back(j.k * j.n);
      if (!options.layer_ms.empty()) job_ms.push_back(options.layer_ms[static_cast<std::size_t>(std::find(layers.begin(), layers.end(), j.node) - layers.begin())]);
    }
    const double budget = options.layer_ms.empty()
                              ? options.sparsity * static_cast<double>(std::accumulate(weights.begin(), weights.end(), std::int64_t{0}))
                              : options.saving_ms;
    sparsity = allocate(errors, level_savings(weights, levels, job_ms, options), levels, budget);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      predicted[i] = errors[i][static_cast<std::size_t>(std::find(levels.begin(), levels.end(), sparsity[i]) - levels.begin())];
    }
    // The solvers are built again below rather than kept: all of them at once would hold three
    // D x D matrices per layer, past the moment budget on BERT-sized models.
  }
  std::vector<block_sparsity_layer> out(jobs.size());
  const auto install_job = [&](std::size_t i) {
    install(m, jobs[i], out[i].result);
    out[i].result.weight.clear();
    out[i].result.bias.clear();
  };
  if (options.sequential) {
    sparsify_in_sequence(m, jobs, sparsity, batches, options, [&](std::size_t i, block_sparsity_result r) {
      out[i] = {jobs[i].node->label(), jobs[i].k, jobs[i].n, jobs[i].bias.has_value(), std::move(r), predicted[i]};
      install_job(i);
    });
    return out;
  }
  for_each_solver(m, jobs, batches, options, max_gram_bytes, [&](std::size_t i, const block_solver& s) {
    out[i] = {jobs[i].node->label(), jobs[i].k, jobs[i].n, jobs[i].bias.has_value(), s.solve(sparsity[i]), predicted[i]};
  });
  // Every solve read the unchanged model, so the results go in only now.
  for (std::size_t i = 0; i < jobs.size(); ++i) install_job(i);
  return out;
}

std::vector<block_sparsity_sensitivity> measure_block_sparsity_sensitivity(const ir::model& m,
                                                                          const std::vector<const ir::node*>& layers,
                                                                          std::span<const runtime::tensor_map> batches,
                                                                          const block_sparsity_options& options,
                                                                          std::int64_t max_gram_bytes) {
  check_options(options);
  const std::vector<block_job> jobs = jobs_of(m, layers);
  const std::vector<double> levels = allocation_levels(options.max_layer_sparsity);
  level_tables t = measure_levels(m, jobs, batches, options, max_gram_bytes, levels, true);
  std::vector<block_sparsity_sensitivity> out;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    out.push_back({jobs[i].node->label(), levels, std::move(t.relative_error[i]), std::move(t.cosine_drop[i])});
  }
  return out;
}

}  // namespace inferopt::prune
