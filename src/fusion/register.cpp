#include "inferopt/fusion/register.hpp"

#include "inferopt/fusion/fuse_conv_activation.hpp"
#include "inferopt/fusion/fuse_gemm_activation.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  registry.add<fuse_conv_activation>();
  registry.add<fuse_gemm_activation>();
}

}  // namespace inferopt
