// Shape inference past validation: with the inputs' symbolic dims bound to small sizes, and
// again in refresh mode, as commands run it after their edits.

#include "fuzz_model.hpp"
#include "inferopt/ir/shape_inference.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferopt;
  fuzz::refusals_allowed([&] {
    std::optional<ir::model> m = fuzz::validated_model(data, size);
    if (!m) return;
    ir::shape_inference_options bound;
    std::int64_t next = 1;
    for (const std::string& name : ir::symbolic_input_dims(m->graph())) bound.dim_values.emplace(name, next++ % 4 + 1);
    ir::infer_shapes(*m, bound);
    ir::shape_inference_options refresh;
    refresh.declared = ir::shape_inference_options::declared_types::refresh;
    ir::infer_shapes(*m, refresh);
    (void)ir::count_unknown_shapes(m->graph());
  });
  return 0;
}
