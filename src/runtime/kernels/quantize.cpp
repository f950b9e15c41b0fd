// PLACEHOLDER being written: quantize kernels.
#include "inferopt/runtime/kernel.hpp"
namespace inferopt::runtime {
void register_quantize_kernels(kernel_registry& r) { (void)r; }
}  // namespace inferopt::runtime
