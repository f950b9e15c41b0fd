// PLACEHOLDER being written: nn kernels.
#include "inferopt/runtime/kernel.hpp"
namespace inferopt::runtime {
void register_nn_kernels(kernel_registry& r) { (void)r; }
}  // namespace inferopt::runtime
