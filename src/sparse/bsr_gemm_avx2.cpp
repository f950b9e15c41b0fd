// The AVX2 + FMA build of the CPU block-sparse GEMM. CMake compiles this file with -mavx2
// -mfma on x86-64 with GCC or Clang (see the sparse target); without those flags it only
// reports itself unavailable (bsr_gemm.cpp then never runs it).
#include "bsr_gemm_isa.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define INFEROPT_SPARSE_ISA isa_avx2
#include "bsr_gemm_avx2_ops.hpp"

namespace inferopt::sparse::detail::isa_avx2 {
namespace {

using ops = avx2_ops;

}  // namespace

bool available() noexcept { return true; }

}  // namespace inferopt::sparse::detail::isa_avx2

#include "bsr_gemm_body.hpp"

#else

#include <cstdlib>

namespace inferopt::sparse::detail::isa_avx2 {
bool available() noexcept { return false; }
void pack(const pack_problem&, std::int64_t, std::int64_t) noexcept { std::abort(); }
void compute(const bsr_problem&, std::int64_t, std::int64_t) noexcept { std::abort(); }
}  // namespace inferopt::sparse::detail::isa_avx2

#endif
