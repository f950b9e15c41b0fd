// Structured channel pruning of a small trained CNN (the digits model shipped with the tests):
// find the channel groups (channels that must go together across the residual Add and into
// the classifier), remove 30% of each by the L1 norm of their filters, then re-estimate
// BatchNormalization statistics from four training batches. Prints test accuracy before,
// after pruning, and after recalibration.

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "inferopt/inferopt.hpp"
#include "inferopt/prune/bn_recalibration.hpp"
#include "inferopt/prune/prune.hpp"

namespace {

using namespace inferopt;

/// Share of the held-out images whose arg-max logit is their label.
double accuracy(const ir::model& m, const runtime::tensor& images, const std::vector<std::int64_t>& labels) {
  runtime::session s(m, runtime::session_options{.threads = 1});
  const std::vector<float> logits = s.run({{"x", images}}).at("logits").to_float();
  std::size_t right = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float* row = logits.data() + i * 10;
    right += static_cast<std::int64_t>(std::max_element(row, row + 10) - row) == labels[i] ? 1 : 0;
  }
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

}  // namespace

int main() {
  try {
    const std::filesystem::path dir = INFEROPT_DIGITS_DIR;
    ir::model m = ir::load_model(dir / "digits_cnn.onnx");
    const runtime::tensor images = runtime::read_tensor_file((dir / "x.pb").string());
    const runtime::tensor label_tensor = runtime::read_tensor_file((dir / "labels.pb").string());
    const std::int64_t* first_label = label_tensor.data<std::int64_t>();
    const std::vector<std::int64_t> labels(first_label, first_label + label_tensor.element_count());
    std::vector<runtime::tensor_map> calibration;
    for (int k = 0; k < 4; ++k) {
      calibration.push_back({{"x", runtime::read_tensor_file((dir / "calib" / ("input_" + std::to_string(k) + ".pb")).string())}});
    }
    const double before = accuracy(m, images, labels);

    prune::prune_options options;
    options.selection.ratio = 0.3;
    options.selection.round_to = 1;  // 16- and 32-channel layers
    const prune::prune_summary s = prune::prune_model(m, options);
    ir::verify(m.graph());
    const double pruned = accuracy(m, images, labels);
    const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, calibration);
    const double recalibrated = accuracy(m, images, labels);

    std::cout << "groups: " << s.prunable_groups << " prunable of " << s.groups << ", channels removed "
              << s.removed_units << " of " << s.prunable_units << "\n";
    std::cout << "MACs per image " << s.macs_before << " -> " << s.macs_after << ", params " << s.params_before << " -> "
              << s.params_after << "\n";
    std::cout << "test accuracy " << 100.0 * before << "% -> " << 100.0 * pruned << "% pruned -> " << 100.0 * recalibrated
              << "% after recalibrating " << r.layers << " BatchNormalization layer(s)\n";
    if (s.macs_after >= s.macs_before || recalibrated <= pruned) {
      std::cerr << "mismatch: expected fewer MACs and recalibration to win back accuracy\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
