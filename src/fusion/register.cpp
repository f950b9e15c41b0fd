#include "inferopt/fusion/register.hpp"

#include "inferopt/fusion/eliminate_common_subexpressions.hpp"
#include "inferopt/fusion/eliminate_noop.hpp"
#include "inferopt/fusion/fuse_attention.hpp"
#include "inferopt/fusion/fuse_bias_gelu.hpp"
#include "inferopt/fusion/fuse_bn_into_gemm.hpp"
#include "inferopt/fusion/fuse_consecutive_reshapes.hpp"
#include "inferopt/fusion/fuse_consecutive_transposes.hpp"
#include "inferopt/fusion/fuse_conv_activation.hpp"
#include "inferopt/fusion/fuse_conv_bn.hpp"
#include "inferopt/fusion/fuse_conv_mul_add.hpp"
#include "inferopt/fusion/fuse_gelu.hpp"
#include "inferopt/fusion/fuse_gemm_activation.hpp"
#include "inferopt/fusion/fuse_gemm_transpose.hpp"
#include "inferopt/fusion/fuse_layer_norm.hpp"
#include "inferopt/fusion/fuse_matmul_add.hpp"
#include "inferopt/fusion/fuse_pad_into_conv.hpp"
#include "inferopt/fusion/fuse_skip_layer_norm.hpp"
#include "inferopt/fusion/merge_parallel_matmuls.hpp"
#include "inferopt/fusion/reduce_mean_to_global_pool.hpp"
#include "inferopt/fusion/residual_sum_before_norm.hpp"
#include "inferopt/fusion/sum_to_add.hpp"
#include "inferopt/fusion/trim_dead_conv_taps.hpp"

namespace inferopt {

void register_fusion_passes(pass_registry& registry) {
  registry.add<fuse_conv_bn>();
  registry.add<fuse_conv_mul_add>();
  registry.add<fuse_bn_into_gemm>();
  registry.add<fuse_matmul_add>();
  registry.add<fuse_gemm_transpose>();
  registry.add<fuse_conv_activation>();
  registry.add<fuse_gemm_activation>();
  registry.add<fuse_consecutive_transposes>();
  registry.add<fuse_consecutive_reshapes>();
  registry.add<eliminate_noop>();
  registry.add<eliminate_common_subexpressions>();
  registry.add<fuse_pad_into_conv>();
  registry.add<trim_dead_conv_taps>();
  registry.add<reduce_mean_to_global_pool>();
  registry.add<sum_to_add>();
  registry.add<residual_sum_before_norm>();
  registry.add<fuse_gelu>();
  registry.add<fuse_layer_norm>();
  registry.add<fuse_attention>();
  registry.add<fuse_skip_layer_norm>();
  registry.add<fuse_bias_gelu>();
  registry.add<merge_parallel_matmuls>();
}

}  // namespace inferopt
