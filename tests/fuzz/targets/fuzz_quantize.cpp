// Quantization's calibrate-and-insert on two random calibration batches: statistics of every
// float tensor, ranges, QDQ insertion, then the structural check.

#include "fuzz_model.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/quant/calibrate.hpp"
#include "inferopt/quant/qdq.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    std::vector<runtime::tensor_map> batches;
    {
      runtime::session probe(*m, runtime::session_options{.threads = 1});
      for (std::uint64_t seed = 0; seed < 2; ++seed) batches.push_back(runtime::random_inputs(probe, seed));
    }
    quant::calibrate_options options;
    options.threads = 1;
    const quant::calibration_result calibrated = quant::calibrate(*m, batches, options);
    (void)quant::quantize_qdq(*m, calibrated.ranges);
    ir::verify(m->graph());
  });
  return 0;
}
