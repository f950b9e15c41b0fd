#pragma once
// An ir::shape of known dims, for tests that declare graph inputs.

#include <cstdint>
#include <vector>

#include "inferopt/ir/value_type.hpp"

namespace inferopt::test {

inline ir::shape static_shape(const std::vector<std::int64_t>& dims) {
  ir::shape s;
  for (std::int64_t d : dims) s.push_back(ir::dim{d});
  return s;
}

}  // namespace inferopt::test
