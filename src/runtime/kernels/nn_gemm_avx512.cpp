// The AVX-512 (F, DQ, BW, VL) build of the nn GEMM. CMake compiles this file with those
// flags on x86-64 (see the runtime target: Eigen needs the flags, see nn_gemm.hpp); without
// them it only reports itself missing.
#include "nn_gemm.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__FMA__)
#define Eigen inferopt_eigen_avx512
#define INFEROPT_NN_GEMM_ISA isa_avx512
#define INFEROPT_NN_GEMM_NAME "avx512"
#include "nn_gemm_body.hpp"
#else
namespace inferopt::runtime::nn::isa_avx512 {
const gemm_config* config() noexcept { return nullptr; }
}  // namespace inferopt::runtime::nn::isa_avx512
#endif
