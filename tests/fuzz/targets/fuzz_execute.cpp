// The executor on a model that passed validation, with seeded random inputs, one thread.

#include "fuzz_model.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    runtime::session s(*m, runtime::session_options{.threads = 1});
    (void)s.run(runtime::random_inputs(s, size));
  });
  return 0;
}
