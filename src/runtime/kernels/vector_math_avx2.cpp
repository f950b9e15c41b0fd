// The AVX2+FMA build of the vector math. CMake compiles this file with -mavx2 -mfma on
// x86-64 (see the runtime target); without them it only reports itself missing.
#include "vector_math.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#define Eigen inferopt_eigen_vector_math_avx2
#define INFEROPT_VECTOR_MATH_ISA vector_math_avx2
#define INFEROPT_VECTOR_MATH_NAME "avx2"
#include "vector_math_body.hpp"
#else
namespace inferopt::runtime::nn::vector_math_avx2 {
const vector_math_config* config() noexcept { return nullptr; }
}  // namespace inferopt::runtime::nn::vector_math_avx2
#endif
