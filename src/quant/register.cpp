#include "inferopt/quant/register.hpp"

namespace inferopt {

void register_quant_passes(pass_registry& registry) {
  (void)registry;
}

}  // namespace inferopt
