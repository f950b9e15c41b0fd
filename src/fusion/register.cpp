#include "inferopt/fusion/register.hpp"

#include "inferopt/fusion/fuse_bn_into_gemm.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  registry.add<fuse_bn_into_gemm>();
}

}  // namespace inferopt
