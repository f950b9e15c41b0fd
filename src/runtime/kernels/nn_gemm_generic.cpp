// The baseline build of the nn GEMM: the compiler's default instruction set (SSE2 on x86-64),
// and the fallback of every CPU. It keeps the ordinary `Eigen` namespace: its instantiations
// may be shared with other kernel families, which are compiled with the same flags.
#define INFEROPT_NN_GEMM_ISA isa_generic
#define INFEROPT_NN_GEMM_NAME "generic"
#include "nn_gemm_body.hpp"
