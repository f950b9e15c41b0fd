// The top of the module graph, as MLIR's InitAllPasses.h sits above every dialect: the one
// place that knows every module with passes. The pass layer itself knows none of them.

#include "inferopt/builtin.hpp"

#include "inferopt/fusion/register.hpp"
#include "inferopt/pass/register.hpp"
#include "inferopt/quant/register.hpp"
#include "inferopt/sparse/register.hpp"

namespace inferopt {

void register_levels(pass_registry& registry) {
  const std::string cleanups = "fold-constants,eliminate-identity,eliminate-dropout,dce,remove-unused";
  // Cleanups and fusions feed each other (a folded Transpose exposes a MatMul+Add, a removed
  // Pad exposes a Conv+BN), so they share one fixpoint group.
  const std::string default_domain =
      "fold-constants,eliminate-identity,eliminate-dropout,eliminate-noop,sum-to-add,fuse-consecutive-transposes,"
      "fuse-consecutive-reshapes,eliminate-common-subexpressions,fuse-pad-into-conv,trim-dead-conv-taps,fuse-conv-bn,fuse-conv-mul-add,"
      "fuse-bn-into-gemm,fuse-gemm-transpose,fuse-matmul-add,fuse-layer-norm,fuse-gelu,reduce-mean-to-global-pool,dce,remove-unused";
  registry.add_pipeline("O0", "", "no optimization");
  registry.add_pipeline("O1", "fixpoint(" + cleanups + ")", "cleanups to a fixpoint; standard ONNX only");
  // Batched MatMul + Add stays apart until the transformer fusions have run: the Reshapes of
  // its Gemm form around a projection would merge with an attention head split, and the bias
  // Adds are what the fused ops take in. Both levels run it after them.
  std::string fixpoint_domain = default_domain;
  fixpoint_domain.replace(fixpoint_domain.find("fuse-matmul-add"), std::string("fuse-matmul-add").size(),
                          "fuse-matmul-add{batched=false}");
  const std::string after = "fuse-matmul-add,fuse-consecutive-reshapes";
  // Shapes first: exported models often carry no value_info, and several fusions need it.
  registry.add_pipeline("O2", "infer-shapes,fixpoint(" + fixpoint_domain + "),fuse-attention{domain=ai.onnx}," + after + ",remove-unused",
                        "O1 plus fusions that stay in the default ONNX domain");
  // Activations are fused last: a FusedConv hides its Conv from the default-domain fusions.
  // Below opset 20 GELU has no standard op, so -O3 writes onnxruntime's.
  registry.add_pipeline("O3",
                        "infer-shapes,fixpoint(" + fixpoint_domain +
                            "),fuse-attention,fuse-gelu{domain=com.microsoft},fuse-layer-norm{domain=com.microsoft},"
                            "fuse-skip-layer-norm,fuse-bias-gelu," + after + ",fuse-conv-activation,fuse-gemm-activation,remove-unused",
                        "O2 plus com.microsoft FusedConv/FusedGemm/MultiHeadAttention/Attention/Gelu/FastGelu/BiasGelu/"
                        "QuickGelu/SkipLayerNormalization, SimplifiedLayerNormalization (non-standard ops; ONNX Runtime runs them)");
}

pass_registry builtin_registry() {
  pass_registry registry;
  register_cleanup_passes(registry);
  register_fusion_passes(registry);
  register_quant_passes(registry);
  register_sparse_passes(registry);
  register_levels(registry);
  return registry;
}

}  // namespace inferopt
