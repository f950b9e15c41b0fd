#pragma once
// Calibration and evaluation data of the commands that change a model's numbers from
// calibration data (prune, sparsify): the options, their checks, reading them, and how the
// changed model agrees with the original on them.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::cli {

struct calibration_sources {
  std::string calib_dir;
  std::string eval_dir;
  std::string calib_text;
  std::string eval_text;
  std::string tokenizer;
  std::size_t seq_len = 0;

  [[nodiscard]] bool given() const { return !calib_dir.empty() || !calib_text.empty(); }
};

/// How a command prunes to a measured speedup: --target-speedup and how it is timed.
struct latency_sources {
  double target_speedup = 0.0;  ///< 0: no target
  int threads = 1;
  int rounds = 10;
  std::size_t seq_len = 0;
};

/// Declares --target-speedup (with `target_help`), --latency-threads, --latency-rounds and
/// --latency-seq-len.
void declare_latency_options(CLI::App& sub, latency_sources& l, const std::string& target_help);

/// @throws error(errc::invalid_argument) for values out of range, or a target without
///         calibration data to time on.
void check_latency_options(const latency_sources& l, const calibration_sources& s);

/// Calibration batches and the batches agreement is measured on (the evaluation ones when
/// given, else the calibration ones), both made for the unchanged model.
struct calibration_data {
  std::vector<runtime::tensor_map> calibration;
  std::vector<runtime::tensor_map> evaluation;
  bool held_out = false;
};

/// Declares --calib-dir, --calib-text, --tokenizer, --seq-len, --eval-dir, --eval-text;
/// `calib_dir_help` says what the command does with them.
void declare_calibration_options(CLI::App& sub, calibration_sources& s, const std::string& calib_dir_help);

/// @throws error(errc::invalid_argument) for sources that do not go together.
void check_calibration_sources(const calibration_sources& s);

/// Reads the batches (none when no source is given).
[[nodiscard]] calibration_data read_calibration(const calibration_sources& s, const ir::model& original);

/// The batch a latency target is timed on, and a multiply-add budget counted at: with
/// `seq_len` and calibration text, the first sentence padded to that length (a length users
/// serve at, not the sentence's own); else the calibration batch with the most elements. @throws error(errc::invalid_argument) for
/// a length without text.
[[nodiscard]] runtime::tensor_map latency_batch(const calibration_sources& s, const calibration_data& d,
                                                const ir::model& original, const latency_sources& l);

/// Agreement of `candidate` with `reference` on `batches`: top-1, mean output cosine and the
/// first output's SQNR.
[[nodiscard]] nlohmann::json agreement(const ir::model& reference, const ir::model& candidate,
                                       const std::vector<runtime::tensor_map>& batches);

/// Prints and returns the agreement on `d.evaluation`, naming which batches those are.
nlohmann::json report_agreement(const calibration_data& d, const ir::model& original, const ir::model& changed);

}  // namespace inferopt::cli
