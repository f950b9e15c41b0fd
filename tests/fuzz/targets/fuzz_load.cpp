// The protobuf loader and validation: any bytes either load and validate or are refused,
// and what loads writes back and loads again to the same graph size.

#include "fuzz_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    const std::string bytes = ir::serialize_model(*m);
    const ir::model again = ir::parse_model(bytes);
    if (again.graph().node_count_recursive() != m->graph().node_count_recursive()) {
      std::cerr << "round trip changed the node count\n";
      std::abort();
    }
  });
  return 0;
}
