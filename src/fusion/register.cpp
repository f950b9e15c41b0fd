#include "inferopt/fusion/register.hpp"

#include "inferopt/fusion/fuse_bn_into_gemm.hpp"
#include "inferopt/fusion/fuse_gemm_transpose.hpp"
#include "inferopt/fusion/fuse_matmul_add.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  registry.add<fuse_bn_into_gemm>();
  registry.add<fuse_matmul_add>();
  registry.add<fuse_gemm_transpose>();
}

}  // namespace inferopt
