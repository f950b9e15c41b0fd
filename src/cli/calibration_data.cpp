#include "calibration_data.hpp"

#include <cmath>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/prune/latency_model.hpp"
#include "inferopt/quant/quantization_error.hpp"
#include "inferopt/quant/text_calibration.hpp"
#include "inferopt/quant/wordpiece_tokenizer.hpp"

namespace inferopt::cli {

void declare_calibration_options(CLI::App& sub, calibration_sources& s, const std::string& calib_dir_help) {
  sub.add_option("--calib-dir", s.calib_dir, calib_dir_help);
  sub.add_option("--calib-text", s.calib_text, "Calibration sentences of a text encoder, one per line (needs --tokenizer)");
  sub.add_option("--tokenizer", s.tokenizer, "A WordPiece tokenizer.json (Hugging Face) for --calib-text and --eval-text");
  sub.add_option("--seq-len", s.seq_len, "Pad or truncate sentences to this length where the model's sequence is symbolic");
  sub.add_option("--eval-dir", s.eval_dir, "Batches to measure agreement on (default: the calibration batches)");
  sub.add_option("--eval-text", s.eval_text, "Sentences to measure agreement on (default: the calibration sentences)");
}

void check_calibration_sources(const calibration_sources& s) {
  if (!s.calib_dir.empty() && !s.calib_text.empty()) throw error(errc::invalid_argument, "give --calib-dir or --calib-text, not both");
  const bool text = !s.calib_text.empty() || !s.eval_text.empty();
  if (text != !s.tokenizer.empty()) throw error(errc::invalid_argument, "--calib-text and --tokenizer go together");
  if ((!s.eval_dir.empty() && s.calib_dir.empty()) || (!s.eval_text.empty() && s.calib_text.empty())) {
    throw error(errc::invalid_argument, "--eval-dir needs --calib-dir and --eval-text needs --calib-text");
  }
}

calibration_data read_calibration(const calibration_sources& s, const ir::model& original) {
  calibration_data d;
  if (!s.given()) return d;
  runtime::session probe(original, {.threads = 1});
  const auto read = [&](const std::string& dir, const std::string& text) {
    return dir.empty() ? text_batches(probe, text, s.tokenizer, s.seq_len) : batches_from_dir(probe, dir);
  };
  d.calibration = read(s.calib_dir, s.calib_text);
  d.held_out = !s.eval_dir.empty() || !s.eval_text.empty();
  d.evaluation = d.held_out ? read(s.eval_dir, s.eval_text) : d.calibration;
  return d;
}

void declare_latency_options(CLI::App& sub, latency_sources& l, const std::string& target_help) {
  sub.add_option("--target-speedup", l.target_speedup, target_help);
  sub.add_option("--latency-threads", l.threads, "Executor threads while timing for --target-speedup (default 1)");
  sub.add_option("--latency-rounds", l.rounds, "Alternating timed runs per measurement for --target-speedup (default 10)");
  sub.add_option("--latency-seq-len", l.seq_len,
                 "With --calib-text: time a --target-speedup on, or count a --budget macs at, a sentence padded to this length (default: the longest calibration batch)");
}

void check_latency_options(const latency_sources& l, const calibration_sources& s) {
  if (l.threads < 1 || l.threads > 256) throw error(errc::invalid_argument, "--latency-threads must be in [1, 256]");
  if (l.rounds < 1 || l.rounds > 1000) throw error(errc::invalid_argument, "--latency-rounds must be in [1, 1000]");
  if (l.seq_len != 0 && s.calib_text.empty()) throw error(errc::invalid_argument, "--latency-seq-len pads calibration text: give --calib-text FILE --tokenizer T");
  if (l.target_speedup == 0.0) return;
  if (!(l.target_speedup > 1.0 && l.target_speedup < 100.0)) {
    throw error(errc::invalid_argument, "--target-speedup must be above 1 (and below 100), not " + std::to_string(l.target_speedup));
  }
  if (!s.given()) throw error(errc::invalid_argument, "--target-speedup times the model on a calibration batch: give --calib-dir DIR or --calib-text FILE --tokenizer T");
}

runtime::tensor_map latency_batch(const calibration_sources& s, const calibration_data& d, const ir::model& original,
                                  const latency_sources& l) {
  const std::size_t seq_len = l.seq_len;
  if (seq_len == 0) return prune::largest_batch(d.calibration);
  const std::vector<std::string> first = quant::read_sentences(s.calib_text, 1);
  runtime::session probe(original, {.threads = 1});
  return quant::text_calibration_batches(probe, first, quant::wordpiece_tokenizer::from_file(s.tokenizer), seq_len).front();
}

nlohmann::json agreement(const ir::model& reference, const ir::model& candidate, const std::vector<runtime::tensor_map>& batches) {
  const quant::quantization_error e = quant::measure_quantization_error(reference, candidate, batches);
  nlohmann::json out{{"top1_agreement", e.top1_agreement}, {"samples", e.samples}, {"output_cosine", e.output_cosine}};
  const std::string& first_output = reference.graph().outputs().front()->name();
  for (const quant::tensor_sqnr& t : e.tensors) {
    if (t.name == first_output) out["output_sqnr_db"] = std::isfinite(t.sqnr_db) ? nlohmann::json(t.sqnr_db) : nlohmann::json(nullptr);
  }
  return out;
}

nlohmann::json report_agreement(const calibration_data& d, const ir::model& original, const ir::model& changed) {
  const nlohmann::json a = agreement(original, changed, d.evaluation);
  std::cout << "agreement with the original model on the " << (d.held_out ? "evaluation" : "calibration")
            << " batches: mean output cosine " << std::setprecision(4) << a["output_cosine"].get<double>() << std::defaultfloat
            << ", top-1 " << std::fixed << std::setprecision(1) << 100.0 * a["top1_agreement"].get<double>() << "%"
            << std::defaultfloat << "\n";
  return a;
}

}  // namespace inferopt::cli
