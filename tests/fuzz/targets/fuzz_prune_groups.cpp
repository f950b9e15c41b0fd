// Structured pruning's channel-group analysis, on a model with inferred shapes as the prune
// command gives it, and its explanation.

#include "fuzz_model.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/prune/channel_groups.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    ir::infer_shapes(*m);
    const prune::channel_analysis analysis = prune::analyze_channels(*m);
    (void)prune::explain(analysis);
  });
  return 0;
}
