#pragma once
/// Block sparsity from calibration data: which r x c blocks of a linear layer's weight go, and
/// how the kept weights change to make up for them (SparseGPT, Frantar & Alistarh 2023, with
/// whole blocks instead of single weights).
///
/// A layer Y = X W + b (W [K, N]) is judged by its output on calibration rows X, through the
/// moments H = [X 1]^T [X 1] (least_squares_refit.hpp). Its input rows are visited in order;
/// removing w_ij while the rows after i may still change is the Optimal Brain Surgeon step
///   e = w_ij / U_ii,   w_i'j -= e U_ii'  for every later row i' (the bias last),
/// U being the upper Cholesky factor of H^-1: its row i is the inverse moments of the rows not
/// yet visited, so the whole layer costs one factorisation and K^2 N updates. The constant
/// input comes last and is never removed, so the bias takes up the removed rows' mean.
///
/// Masks are chosen a chunk of rows at a time, on the weights as the earlier rows' removals
/// left them: a block's saliency is sum w_ij^2 / U_ii^2 over its entries (the output energy its
/// removal costs), the lowest go, and each chunk loses its share of round(sparsity * blocks).
/// Removed blocks end exactly zero, so a magnitude pass at the same sparsity
/// (sparse::sparsify_blocks) finds exactly them.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/prune/least_squares_refit.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

struct block_sparsity_options {
  std::int64_t block_rows = 16;  ///< along K (the input rows)
  std::int64_t block_cols = 16;  ///< along N (the outputs)
  double sparsity = 0.5;         ///< fraction of the block grid removed, in [0, 1]
  /// Rows whose masks are chosen together (rounded up to whole blocks): larger chunks let
  /// sparsity gather where it costs least; smaller ones rank on more up-to-date weights.
  std::int64_t chunk_rows = 128;
  /// Instead of one pass over the rows in chunks: in each block column (the block_cols outputs
  /// that share a mask), blocks go one at a time, the one whose removal adds the least output
  /// error with every other kept weight of those outputs refit exactly, and the columns share
  /// the layer's removals where they cost least (Optimal Brain Compression's greedy, Frantar
  /// et al. 2022, by blocks). Every kept row makes up for a removal, not only the later ones;
  /// it costs block_rows * K^2 per block removed (chunk_rows is unused).
  bool greedy = false;
  /// Damping of H's diagonal, relative to its mean (SparseGPT uses 1%).
  double relative_damping = 0.01;
  /// apply_calibrated_block_sparsity only: a sparsity per layer instead of the same for all.
  /// Each layer's output error is measured at sixteenths of sparsity up to
  /// `max_layer_sparsity`, and the layers together lose `sparsity` of their weights in blocks,
  /// each step going where it adds the least relative error per weight removed.
  bool allocate = false;
  double max_layer_sparsity = 0.9375;
  /// With `allocate`: the table is end to end instead of each layer's own output error. Each
  /// layer alone is sparsified (on the unchanged model) at every eighth of sparsity and at
  /// the last level, and the drop of the model's first output's mean cosine with the original
  /// is measured on the first `measure_batches` batches; sixteenths between are interpolated.
  /// A layer's own error cannot tell how much of it the layers after it amplify or absorb.
  bool end_to_end = false;
  std::size_t measure_batches = 64;
  /// With `allocate`, latency-aware: each layer's dense time in milliseconds (one per layer
  /// given, in their order) and the time to save instead of `sparsity` of the weights; a
  /// layer at sparsity s > 0 takes layer_ms * time_fraction(s) (a layer left at 0 stays
  /// dense). Sparsity then goes where the output error grows least per millisecond saved;
  /// a layer may jump several levels where the first ones save nothing (a sparse kernel at
  /// low sparsity is slower than the dense one).
  std::vector<double> layer_ms;
  double saving_ms = 0.0;
  std::function<double(double)> time_fraction;
  /// apply_calibrated_block_sparsity only: layer after layer in graph order, each on its input
  /// as the layers before it left it (X'), towards its output in the original model: the
  /// updates solve min || X' W' - X W || (SparseGPT's sequential mode, here also correcting the
  /// error that arrives from the layers before). One run of both models per stage.
  bool sequential = false;
  /// With `sequential`: where a layer's output (after its bias) is only added to another value
  /// R (the residual stream), aim at the original sum X W + b + R instead of X W + b, so the
  /// layer also makes up for the error R' carries from the layers changed before it.
  bool residual_target = false;
};

struct block_sparsity_result {
  std::vector<float> weight;  ///< [K, N] row-major, removed blocks exactly zero
  std::vector<float> bias;    ///< [N]; only when a bias was given
  std::int64_t blocks_total = 0;
  std::int64_t blocks_removed = 0;  ///< round(sparsity * blocks_total)
  /// || X W' + b' - (X W + b) ||^2 / || X W + b ||^2 on the calibration rows: for this mask
  /// after the updates, and for as many blocks removed by l2 norm with nothing updated.
  double relative_error = 0.0;
  double relative_error_magnitude = 0.0;
};

/// Prunes `weight` ([gram.features(), outputs] row-major) to block sparsity. `bias` ([outputs],
/// or empty when the layer has none: then no mean can move and none is returned).
/// @throws error(errc::invalid_argument) for sizes that do not match, options out of range,
///         or no calibration rows.
[[nodiscard]] block_sparsity_result sparsify_blocks_calibrated(const input_gram& gram, std::span<const float> weight,
                                                               std::span<const float> bias, std::int64_t outputs,
                                                               const block_sparsity_options& options);

/// What calibrated block sparsity did to one layer.
struct block_sparsity_layer {
  std::string node;
  std::int64_t k = 0;
  std::int64_t n = 0;
  bool bias_updated = false;  ///< a bias (Gemm C, or the Add after a MatMul) took the removed rows' mean
  block_sparsity_result result;  ///< without its weight and bias vectors (installed into the model)
  /// Allocated only: the allocation's table at the layer's sparsity, what it was predicted to
  /// cost alone: its relative output error on the unchanged model's input, or with end_to_end
  /// the drop of the model output's mean cosine (the drops of the layers are taken to add).
  double sensitivity = 0.0;
};

/// Applies sparsify_blocks_calibrated to each of `layers` (MatMul or Gemm nodes of `m`'s main
/// graph with a constant 2-D float weight), from the moments of their inputs on `batches`
/// (run through `m` before anything changes; gathered in passes of at most `max_gram_bytes`),
/// and writes the updated weights and biases into `m`. `level_errors`, when given, caches the
/// allocation's error table across calls on the same model, layers and batches: read when
/// filled, filled when empty.
/// @throws error(errc::invalid_argument) for a node that is not such a layer, no batches, or
///         activations that are not float.
std::vector<block_sparsity_layer> apply_calibrated_block_sparsity(ir::model& m, const std::vector<const ir::node*>& layers,
                                                                  std::span<const runtime::tensor_map> batches,
                                                                  const block_sparsity_options& options,
                                                                  std::int64_t max_gram_bytes = std::int64_t{512} << 20,
                                                                  std::vector<std::vector<double>>* level_errors = nullptr);

/// One layer's row of the allocation's error table.
struct block_sparsity_sensitivity {
  std::string node;                   ///< the layer's label
  std::vector<double> levels;         ///< sixteenths of sparsity, 0 up to max_layer_sparsity
  std::vector<double> relative_error; ///< of the layer's output at each level, blocks chosen and the rest updated
  /// With options.end_to_end: the model's output cosine drop at each level, this layer alone sparsified.
  std::vector<double> cosine_drop;
};

/// The per-layer sensitivity `apply_calibrated_block_sparsity` allocates by, alone: each of
/// `layers`' relative output error (and with `options.end_to_end` the output cosine drop) at
/// every sixteenth of sparsity up to `options.max_layer_sparsity`, in graph order, `m` unchanged. Every layer is measured on its
/// inputs in the unchanged model, so tables of disjoint sets of layers measured apart are rows
/// of the table of all of them.
/// @throws error(errc::invalid_argument) as apply_calibrated_block_sparsity does.
[[nodiscard]] std::vector<block_sparsity_sensitivity> measure_block_sparsity_sensitivity(
    const ir::model& m, const std::vector<const ir::node*>& layers, std::span<const runtime::tensor_map> batches,
    const block_sparsity_options& options, std::int64_t max_gram_bytes = std::int64_t{512} << 20);

}  // namespace inferopt::prune

