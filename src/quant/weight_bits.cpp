#include "inferopt/quant/weight_bits.hpp"

#include <string>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {

int largest_weight_code(int bits) {
  if (bits < 2 || bits > 8) {
    throw error(errc::invalid_argument, "weight bits must be 2..8, got " + std::to_string(bits));
  }
  return (1 << (bits - 1)) - 1;
}

int weight_bits_for(const cpu_features& cpu) noexcept {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
  return cpu.has_vnni() ? full_weight_bits : reduced_weight_bits;
#else
  (void)cpu;
  return full_weight_bits;
#endif
}

}  // namespace inferopt::quant
