#pragma once
/// The sparse module: the block-sparse (BSR) matrix, magnitude block pruning and the
/// block-sparse GEMM kernels. It needs nothing of the IR or ONNX. The CUDA kernels
/// (sparse/cuda/) are included separately, and only in CUDA builds.

#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/kernel_status.hpp"
