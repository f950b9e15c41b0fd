#pragma once
// <immintrin.h> for the x86 builds of the block-sparse GEMM, read once with one warning off.

// GCC 12 reports the AVX-512 intrinsics' deliberately undefined operands (_mm512_undefined_ps)
// as maybe uninitialized in every -Wall file that inlines them; the warning is about the
// intrinsics header, so it is off while that header is read (as Eigen/Core quiets its own).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
