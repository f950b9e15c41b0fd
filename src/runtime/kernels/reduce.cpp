// PLACEHOLDER being written: reduce kernels.
#include "inferopt/runtime/kernel.hpp"
namespace inferopt::runtime {
void register_reduce_kernels(kernel_registry& r) { (void)r; }
}  // namespace inferopt::runtime
