#include "inferopt/pass/register.hpp"

#include "inferopt/pass/cleanup/dead_node_elimination.hpp"
#include "inferopt/pass/cleanup/eliminate_dropout.hpp"
#include "inferopt/pass/cleanup/eliminate_identity.hpp"
#include "inferopt/pass/cleanup/remove_unused.hpp"
#include "inferopt/pass/fold_constants.hpp"
#include "inferopt/pass/infer_shapes.hpp"

namespace inferopt {

void register_cleanup_passes(pass_registry& registry) {
  registry.add<dead_node_elimination>();
  registry.add<remove_unused>();
  registry.add<eliminate_identity>();
  registry.add<eliminate_dropout>();
  registry.add<fold_constants>();
  registry.add<infer_shapes_pass>();
}

}  // namespace inferopt
