// PLACEHOLDER being written: elementwise kernels.
#include "inferopt/runtime/kernel.hpp"
namespace inferopt::runtime {
void register_elementwise_kernels(kernel_registry& r) { (void)r; }
}  // namespace inferopt::runtime
