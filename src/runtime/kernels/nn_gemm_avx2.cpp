// The AVX2+FMA build of the nn GEMM. CMake compiles this file with -mavx2 -mfma on x86-64
// (see the runtime target: Eigen needs the flags, see nn_gemm.hpp); without them it only
// reports itself missing.
#include "nn_gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#define Eigen inferopt_eigen_avx2
#define INFEROPT_NN_GEMM_ISA isa_avx2
#define INFEROPT_NN_GEMM_NAME "avx2"
#include "nn_gemm_body.hpp"
#else
namespace inferopt::runtime::nn::isa_avx2 {
const gemm_config* config() noexcept { return nullptr; }
}  // namespace inferopt::runtime::nn::isa_avx2
#endif
