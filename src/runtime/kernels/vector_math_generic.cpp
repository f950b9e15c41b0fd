// The baseline build of the vector math: the compiler's default instruction set (SSE2 on
// x86-64), and the fallback of every CPU.
#define INFEROPT_VECTOR_MATH_ISA vector_math_generic
#define INFEROPT_VECTOR_MATH_NAME "generic"
#include "vector_math_body.hpp"
