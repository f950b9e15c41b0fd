#pragma once
// The digits CNN's held-out accuracy and its calibration batches (tests/data/digits), shared
// by the pruning tests: a trained model gives real accuracy numbers where random weights
// would not.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/paths.hpp"

namespace inferopt::test {

inline std::filesystem::path digits_dir() { return source_dir() / "tests" / "data" / "digits"; }

/// Top-1 accuracy (a fraction in [0, 1]) of `m` on the 500 held-out images: argmax of the
/// logits against the labels, run in batches of 100 so memory stays small.
inline double digits_accuracy(const ir::model& m) {
  const runtime::tensor images = runtime::read_tensor_file((digits_dir() / "x.pb").string());
  const runtime::tensor labels = runtime::read_tensor_file((digits_dir() / "labels.pb").string());
  const std::int64_t count = images.dim(0);
  const std::int64_t image_size = images.element_count() / count;
  const std::span<const float> pixels = images.values<float>();
  const std::span<const std::int64_t> truth = labels.values<std::int64_t>();

  runtime::session_options options;
  options.threads = 1;
  runtime::session session(m, options);
  constexpr std::int64_t batch = 100;
  std::int64_t correct = 0;
  for (std::int64_t first = 0; first < count; first += batch) {
    const std::int64_t n = std::min(batch, count - first);
    runtime::shape_t shape = images.shape();
    shape[0] = n;
    const std::vector<float> slice(pixels.begin() + first * image_size, pixels.begin() + (first + n) * image_size);
    const runtime::tensor_map outputs = session.run({{"x", runtime::tensor::from_values(shape, slice)}});
    const std::span<const float> logits = outputs.at("logits").values<float>();
    const auto classes = static_cast<std::ptrdiff_t>(logits.size()) / n;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto row = logits.begin() + i * classes;
      const std::int64_t predicted = std::max_element(row, row + classes) - row;
      if (predicted == truth[static_cast<std::size_t>(first + i)]) ++correct;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(count);
}

/// The four calibration batches (32 training images each), fed as input "x".
inline std::vector<runtime::tensor_map> digits_calibration_batches() {
  std::vector<runtime::tensor_map> batches;
  for (int k = 0; k < 4; ++k) {
    const auto file = digits_dir() / "calib" / ("input_" + std::to_string(k) + ".pb");
    batches.push_back({{"x", runtime::read_tensor_file(file.string())}});
  }
  return batches;
}

}  // namespace inferopt::test
