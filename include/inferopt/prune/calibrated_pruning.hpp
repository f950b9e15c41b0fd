#pragma once
/// Pruning from calibration activations, without retraining (Kwon et al. 2022; SparseGPT).
///
/// A unit of channels matters by what it adds to the layers that read it. For every layer that
/// reads pruned channels through its weights (a *reader*: MatMul or Gemm with a constant
/// B[K, N], Conv with one group), the unit's contribution x_S W_S (S: its input positions)
/// has mean energy trace(W_S^T G_SS W_S) over the calibration rows, G_SS being the unit's
/// block of the input's second moments. That energy, summed over readers, is the unit's
/// importance: exact for MatMul readers (attention heads through the output projection, FFN
/// neurons through the second linear layer), a per-pixel approximation for Conv.
///
/// After the cut, each MatMul/Gemm reader is refit to what it computed before (see
/// least_squares_refit.hpp): the removed inputs' mean moves into its bias and their
/// correlated part into the kept rows. The moments come from the model before the cut, so
/// plan_refits runs before apply_pruning and install_refits after it.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/least_squares_refit.hpp"
#include "inferopt/prune/pruning_plan.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

/// A cut site through which a layer reads channels with its weights.
struct channel_reader {
  const cut_site* site = nullptr;
  ir::node* node = nullptr;
  std::int64_t feature_axis = 0;  ///< axis of the node's input 0 that holds the positions
};

/// The readers among `a`'s cut sites (those of prunable groups only).
[[nodiscard]] std::vector<channel_reader> channel_readers(const channel_analysis& a);

/// Importance of every unit (`result[g][u]`, empty for pinned groups): the mean energy its
/// channels add to its readers' outputs on `batches`, run through `m` (not changed).
/// `conv_readers_only`: count only the readers that are not MatMul/Gemm.
/// @throws error(errc::invalid_argument) for no batches or non-float activations.
[[nodiscard]] std::vector<std::vector<double>> output_energy_importance(const ir::model& m, const channel_analysis& a,
                                                                        std::span<const runtime::tensor_map> batches,
                                                                        bool conv_readers_only = false);

struct refit_plan_options;

/// Importance as what stays lost after the refit (Optimal Brain Surgeon; SparseGPT's
/// saliency, for a unit of several rows at once): at each MatMul/Gemm reader, the mean energy
/// trace(W_S^T ([H^-1]_SS)^-1 W_S) of removing the unit's rows S while the other inputs are
/// refit, H the reader's input moments with the refit's ridge; Conv readers count their
/// output energy. Redundant units (FFN neurons the others can stand in for) score low.
/// @throws error(errc::invalid_argument) as output_energy_importance.
[[nodiscard]] std::vector<std::vector<double>> reconstruction_importance(const ir::model& m, const channel_analysis& a,
                                                                         std::span<const runtime::tensor_map> batches,
                                                                         const refit_plan_options& options);

/// Importance as what a unit adds to the loss of a greedy OBS removal at each MatMul/Gemm
/// reader: units go one at a time, the one leaving the least error after the others' refit
/// first, the inverse moments and weights updated after each; a unit scores the error it adds
/// to those removed before it (non-decreasing along that order). Unlike
/// reconstruction_importance, which refits around one unit alone, this sees that the neurons
/// standing in for each other cannot all go. Conv readers count their output energy.
/// @throws error(errc::invalid_argument) as output_energy_importance.
[[nodiscard]] std::vector<std::vector<double>> greedy_reconstruction_importance(const ir::model& m, const channel_analysis& a,
                                                                                std::span<const runtime::tensor_map> batches,
                                                                                const refit_plan_options& options);

/// Weights each unit takes with it (elements of every constant it cuts): the cost the
/// global selection balances against importance.
[[nodiscard]] std::vector<std::vector<double>> unit_weight_counts(const ir::model& m, const channel_analysis& a);

/// What the refit of one reader did.
struct reader_refit {
  std::string node;
  std::int64_t inputs_before = 0, inputs_after = 0;
  /// || output - original ||^2 / || original ||^2 on the calibration rows: cut alone, refit.
  double relative_error_cut = 0.0, relative_error_refit = 0.0;
  std::string skipped_because;  ///< empty when refit
};

/// A refit solved on the uncut model, written by install_refits once the model is cut.
struct planned_refit {
  reader_refit report;
  ir::node* node = nullptr;
  bool transposed = false;          ///< Gemm transB: the stored weight is [N, K]
  ir::node* bias_owner = nullptr;   ///< the Add after a MatMul, or the Gemm itself
  std::size_t bias_input = 0;
  std::vector<float> weight;        ///< [kept, N]
  std::vector<float> bias;          ///< [N]
};

struct refit_plan_options {
  refit_options solve;
  /// Input moments held at once (doubles); more readers take more passes over the batches.
  std::int64_t max_gram_bytes = std::int64_t{512} << 20;
  /// prune_model: refit reader after reader on the cut model's own activations
  /// (cut_and_refit_in_sequence) instead of all at once from the uncut model's.
  bool sequential = false;
  /// Sequential only: where a reader's output is added to a residual stream R, refit towards
  /// the original *sum* (X W + b + R - R'), making up for the error the residual carries too.
  bool residual_target = false;
};

/// Solves the refit of every MatMul/Gemm reader whose inputs `plan` removes. `a` must come
/// from `m`, uncut. Readers without a bias to move the mean into, or whose own outputs are
/// pruned too, are reported as skipped.
[[nodiscard]] std::vector<planned_refit> plan_refits(const ir::model& m, const channel_analysis& a, const pruning_plan& plan,
                                                     std::span<const runtime::tensor_map> batches,
                                                     const refit_plan_options& options = {});

/// Writes the refits into `m`, now cut by apply_pruning with the same plan.
void install_refits(ir::model& m, const std::vector<planned_refit>& refits);

/// Cuts `m` by `plan` (apply_pruning, whose result goes to `applied`) and refits its
/// MatMul/Gemm readers one after another in graph order, each on its input as the cut model
/// computes it with the refits before it installed (X'), towards its output in the uncut model:
/// min || X'_K W' + b' - (X W + b) ||^2 (ridge as `options.solve`). So each refit also makes up
/// for the error arriving from the layers before it, which refits solved at once from the
/// uncut model's moments (plan_refits) cannot. Costs one run of both models over the batches
/// per reader input. The reports' errors are measured on X': the cut weights, then the refit.
/// `a` must come from `m`, uncut. @throws error(errc::invalid_argument) as plan_refits.
std::vector<reader_refit> cut_and_refit_in_sequence(ir::model& m, const channel_analysis& a, const pruning_plan& plan,
                                                    std::span<const runtime::tensor_map> batches,
                                                    const refit_plan_options& options, apply_result& applied);

}  // namespace inferopt::prune
