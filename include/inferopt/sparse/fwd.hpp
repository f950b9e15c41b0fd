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

}  // namespace inferopt::sparse
