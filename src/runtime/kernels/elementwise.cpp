// The elementwise kernel family: one registration for the ops of elementwise_*.cpp.

#include "elementwise_common.hpp"

namespace inferopt::runtime {

void register_elementwise_kernels(kernel_registry& r) {
  elementwise::register_activation_kernels(r);
  elementwise::register_math_kernels(r);
  elementwise::register_arithmetic_kernels(r);
  elementwise::register_logic_kernels(r);
  elementwise::register_cast_kernels(r);
}

}  // namespace inferopt::runtime
