#include "inferopt/prune/channel_multiple.hpp"

#include <cstring>

#include "inferopt/runtime/kernel.hpp"

namespace inferopt::prune {

std::int64_t preferred_channel_multiple() noexcept {
  return std::strcmp(runtime::dense_gemm_isa(), "avx512") == 0 ? 16 : 8;
}

}  // namespace inferopt::prune
