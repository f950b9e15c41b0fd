#include "inferopt/quant/register.hpp"

#include "inferopt/quant/to_fp16.hpp"

namespace inferopt {

void register_quant_passes(pass_registry& registry) {
  registry.add<to_fp16>();
}

}  // namespace inferopt
