#include "inferopt/sparse/register.hpp"

#include "inferopt/sparse/sparsify_blocks.hpp"

namespace inferopt {

void register_sparse_passes(pass_registry& registry) {
  registry.add<sparse::sparsify_blocks>();
}

}  // namespace inferopt
