#pragma once
/// Forward declarations of the sparse module.

namespace inferopt::sparse {

struct block_shape;
template <class T>
struct bsr_view;
template <class T>
class bsr_matrix;
struct prune_options;
struct kernel_status;
struct bsr_gemm_args;
struct cpu_context;
struct bsr_op_arrays;
struct sparsify_options;
struct sparsify_candidate;
class sparsify_blocks;

}  // namespace inferopt::sparse
