#include "inferopt/pass/builtin.hpp"

#include "inferopt/fusion/register.hpp"

#include "inferopt/pass/cleanup/dead_node_elimination.hpp"
#include "inferopt/pass/cleanup/eliminate_dropout.hpp"
#include "inferopt/pass/cleanup/eliminate_identity.hpp"
#include "inferopt/pass/cleanup/remove_unused.hpp"
#include "inferopt/pass/fold_constants.hpp"

namespace inferopt {

void register_cleanup_passes(pass_registry& registry) {
  registry.add<dead_node_elimination>();
  registry.add<remove_unused>();
  registry.add<eliminate_identity>();
  registry.add<eliminate_dropout>();
  registry.add<fold_constants>();
}

void register_levels(pass_registry& registry) {
  const std::string cleanups = "fixpoint(fold-constants,eliminate-identity,eliminate-dropout,dce,remove-unused)";
  registry.add_pipeline("O0", "", "no optimization");
  registry.add_pipeline("O1", cleanups, "cleanups to a fixpoint; standard ONNX only");
  registry.add_pipeline("O2", cleanups, "O1 plus default-domain fusions");
  registry.add_pipeline("O3", cleanups + ",fuse-conv-activation,fuse-gemm-activation",
                        "O2 plus com.microsoft fusions (FusedConv, FusedGemm)");
}

pass_registry builtin_registry() {
  pass_registry registry;
  register_cleanup_passes(registry);
  register_fusion_passes(registry);
  register_levels(registry);
  return registry;
}

}  // namespace inferopt
