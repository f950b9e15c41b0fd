#pragma once
// What `inferopt quantize` reads from its command line, and the steps that static
// (quantize.cpp) and dynamic (quantize_dynamic.cpp) quantization share.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/quant/calibration_state.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::cli {

struct quantize_cli_options {
  std::string input;
  std::string output;
  std::string calib_dir;
  int calib_random = 0;
  std::string calib_text;
  std::string tokenizer;
  std::size_t seq_len = 0;
  std::uint64_t seed = 0;
  std::string method = "entropy";
  double percentile = 99.99;
  bool per_tensor = false;
  std::string activation = "s8";
  std::vector<std::string> exclude;
  std::vector<std::string> op_types;
  std::string trt_cache;
  std::string ranges;
  std::string report;
  std::string save_state;
  std::vector<std::string> merge_states;
  std::string validation_dir;
  double min_agreement = 0.99;
  double min_cosine = 0.99;
  std::string metric = "auto";
  bool no_fallback = false;
  int level = -1;  // -O; -1: the mode's default (static 2, dynamic 0)
  int threads = 0;
  std::string mode = "static";
  double smooth_quant = -1.0;  // SmoothQuant alpha; negative: off
  std::string weight_bits = "auto";
};

/// --weight-bits: `auto` gives what onnxruntime's int8 kernels need on the CPU running
/// inferopt (quant::weight_bits_for), else the number given.
/// @throws error(errc::invalid_argument) for anything but auto or 2..8.
[[nodiscard]] int weight_bits_of(const std::string& flag);

/// The line saying which weight bits `flag` chose, and the flag that chooses otherwise.
void print_weight_bits(int bits, const std::string& flag);

/// The batches and saved states the options name, read before calibration starts.
struct quantize_inputs {
  std::vector<runtime::tensor_map> calibration;
  std::vector<quant::calibration_state> shards;
  std::vector<runtime::tensor_map> validation;  // empty: the library's default
};
[[nodiscard]] quantize_inputs read_quantize_inputs(const quantize_cli_options& o, const runtime::session& probe);

/// `inferopt quantize --mode dynamic`.
int run_quantize_dynamic(const quantize_cli_options& o);

}  // namespace inferopt::cli
