#include "inferopt/fusion/register.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  (void)registry;
}

}  // namespace inferopt
