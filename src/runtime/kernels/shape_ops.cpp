// PLACEHOLDER being written: shape_ops kernels.
#include "inferopt/runtime/kernel.hpp"
namespace inferopt::runtime {
void register_shape_kernels(kernel_registry& r) { (void)r; }
}  // namespace inferopt::runtime
