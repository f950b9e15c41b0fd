// The AVX-512 build of the vector math. CMake compiles this file with the AVX-512 (F, DQ, BW, VL) flags on
// x86-64 (see the runtime target); without them it only reports itself missing.
#include "vector_math.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__FMA__)
#define Eigen inferopt_eigen_vector_math_avx512
#define INFEROPT_VECTOR_MATH_ISA vector_math_avx512
#define INFEROPT_VECTOR_MATH_NAME "avx512"
#include "vector_math_body.hpp"
#else
namespace inferopt::runtime::nn::vector_math_avx512 {
const vector_math_config* config() noexcept { return nullptr; }
}  // namespace inferopt::runtime::nn::vector_math_avx512
#endif
