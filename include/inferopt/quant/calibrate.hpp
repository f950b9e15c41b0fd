#pragma once
/// Calibration end to end: run a model on calibration batches, collect the statistics of the
/// tensors a filter selects (through the executor's observer, plus the graph inputs from the
/// feeds), and turn them into ranges with a calibrator.

#include <cstddef>
#include <functional>
#include <span>

#include "inferopt/ir/model.hpp"
#include "inferopt/quant/calibration_state.hpp"
#include "inferopt/quant/calibrators.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::quant {

/// Called after each finished batch with (batches done, batches in all).
using calibration_progress = std::function<void(std::size_t done, std::size_t total)>;

struct calibrate_options {
  calibrator_options calibrator;   ///< method, percentile, ...
  statistics_options statistics;   ///< histogram bins, averaging constant
  /// Worker threads, each with its own session and state; 0: the hardware's, never more than
  /// the batch count. Each session runs its kernels on one thread.
  int threads = 0;
  tensor_filter filter;            ///< null: `is_floating_tensor`
  /// Called from worker threads, one call at a time; `done` increases by one per call.
  calibration_progress on_progress;
};

struct calibration_result {
  calibration_state state;
  range_table ranges;
};

/// Runs `model` on every batch and calibrates. Thread t takes a contiguous slice of the
/// batches, in order, and the slices' states are merged in order, so the result equals a
/// single-threaded run bit for bit (serialized states are equal bytes).
/// @throws error(errc::invalid_argument) when `batches` is empty; any error a session throws
///         (building it, or running a batch), after every worker stopped.
[[nodiscard]] calibration_result calibrate(const ir::model& model, std::span<const runtime::tensor_map> batches,
                                           const calibrate_options& options = {});

}  // namespace inferopt::quant
