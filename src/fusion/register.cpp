#include "inferopt/fusion/register.hpp"

#include "inferopt/fusion/fuse_conv_bn.hpp"
#include "inferopt/fusion/fuse_conv_mul_add.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  registry.add<fuse_conv_bn>();
  registry.add<fuse_conv_mul_add>();
}

}  // namespace inferopt
