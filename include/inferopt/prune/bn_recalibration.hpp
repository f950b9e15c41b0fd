#pragma once
/// BatchNormalization recalibration after pruning.
///
/// Pruning the input channels of a convolution shifts the distribution of its output, so the
/// running mean and variance stored in the BatchNormalization after it no longer describe the
/// data it sees. Recalibration re-estimates them from calibration inputs, the way PyTorch does
/// with the model in train mode and `momentum=None`: while the batches flow, every
/// BatchNormalization normalizes with the statistics of the batch it is looking at (so later
/// layers see what they will see once earlier layers are fixed), and its new running mean and
/// variance are the averages over batches of the batch mean and of the unbiased batch variance.
/// It must run before BatchNormalization is folded into convolutions.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::prune {

struct bn_recalibration_options {
  /// Names of the BatchNormalization nodes to recalibrate; empty: every one of the main graph.
  std::vector<std::string> nodes;
  /// Executor threads (0: all cores).
  int threads = 0;
};

struct bn_recalibration_result {
  std::int64_t layers = 0;   ///< BatchNormalization nodes whose statistics were replaced
  std::int64_t batches = 0;  ///< calibration batches run
  /// Per layer: elements per channel summed over batches; the smallest over layers when they
  /// differ (the layer whose estimate rests on the fewest values).
  std::int64_t samples = 0;
};

/// Replaces the running mean and variance (inputs 3 and 4) of the chosen BatchNormalization
/// nodes with statistics measured on `batches`. Only inference-form nodes with constant
/// scale, bias, mean and variance are touched; the others are left alone and not counted.
/// Training-mode nodes are not recalibrated, but while measuring they normalize with batch
/// statistics, as their `Y` does. The caller's model is edited only after every batch ran;
/// a mean or variance tensor that other nodes also read is replaced for this node only.
/// @throws error(errc::invalid_argument) when `batches` is empty, a batch holds one value
///         per channel (the unbiased variance needs two), `options.nodes` names a node the
///         main graph lacks, or a statistic comes out non-finite; error(errc::unsupported)
///         for default-domain opsets before 5; any error the executor throws.
bn_recalibration_result recalibrate_batch_norm(ir::model& m, std::span<const runtime::tensor_map> batches,
                                               const bn_recalibration_options& options = {});

}  // namespace inferopt::prune
