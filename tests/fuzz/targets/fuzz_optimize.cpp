// The -O pipelines, each pass checked by verify_each, and the result written. The level
// comes from the input's size, so every level meets every kind of model.

#include "fuzz_model.hpp"
#include "inferopt/builtin.hpp"
#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  static const pass_registry registry = builtin_registry();
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    const int level = static_cast<int>(size % 3) + 1;
    pass_manager manager;
    manager.add_instrumentation(std::make_unique<verify_each>());
    pipeline passes = level_pipeline(level, registry);
    manager.run(passes, *m);
    (void)ir::serialize_model(*m);
  });
  return 0;
}
