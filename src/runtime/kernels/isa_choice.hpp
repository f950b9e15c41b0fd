#pragma once
// Which of a kernel family's instruction-set builds this process runs: the widest one that is
// compiled in, that the CPU runs and that INFEROPT_NN_ISA=generic|avx2 allows (so that tests
// can run every build on one machine). The nn GEMM (nn_gemm.cpp) and the vector math
// (vector_math.cpp) choose through it, so that one variable caps both.
#include <cstdlib>
#include <cstring>

#include "inferopt/core/cpu_features.hpp"

namespace inferopt::runtime::nn {

/// `generic` is the fallback and must not be null; the others are null when their file was
/// compiled without their flags.
template <class Config>
const Config& choose_isa_build(const Config* generic, const Config* avx2, const Config* avx512) noexcept {
  const char* cap = std::getenv("INFEROPT_NN_ISA");
  const bool allow_avx512 = !cap || std::strcmp(cap, "avx512") == 0;
  const bool allow_avx2 = allow_avx512 || std::strcmp(cap, "avx2") == 0;
  const cpu_features& cpu = cpu_features_of_this_machine();
  if (avx512 != nullptr && allow_avx512 && cpu.has_avx512_skx()) return *avx512;
  if (avx2 != nullptr && allow_avx2 && cpu.has_avx2_fma()) return *avx2;
  return *generic;
}

}  // namespace inferopt::runtime::nn
