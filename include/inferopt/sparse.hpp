#pragma once
/// The sparse module: the block-sparse (BSR) matrix, magnitude block pruning, the block-sparse
/// GEMM kernels, the layout of the `inferopt.BlockSparseMatMul` op and the speedup model. It
/// needs nothing of the IR or ONNX, and all of it but the CUDA side is header-only (CMake
/// target inferopt::sparse_kernels). The graph pass that emits the op, `sparsify-blocks`, needs
/// the IR and has its own header, inferopt/sparse/sparsify_blocks.hpp (ONNX builds only). The
/// CUDA kernels (sparse/cuda/) are included separately, and only in CUDA builds.

#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/kernel_status.hpp"
#include "inferopt/sparse/speedup_model.hpp"
