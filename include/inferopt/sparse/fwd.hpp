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

namespace cuda {  // CUDA builds only (INFEROPT_SPARSE_CUDA)
struct device_bsr_view;
class device_bsr_matrix;
struct bsr_gemm_args;
struct break_even_table;
struct gemm_call_args;
class gemm_dispatcher;
}  // namespace cuda

}  // namespace inferopt::sparse
