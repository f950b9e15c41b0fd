#pragma once
/// Y = act(X op(W) + bias) on a CUDA device with a constant W: the block-sparse kernel when W
/// is sparse enough to win, cuBLAS dense otherwise. Declared without CUDA headers; defined only
/// in builds with CUDA (INFEROPT_SPARSE_CUDA).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/stream_ref.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/cuda/bsr_gemm.hpp"
#include "inferopt/sparse/kernel_status.hpp"

namespace inferopt::sparse::cuda {

/// The block sparsity (fraction of W's block grid not stored) from which the block-sparse
/// kernel is chosen over cuBLAS dense, per element type and block shape.
///
/// The defaults are unmeasured: guesses from a roofline argument (the sparse kernel computes one
/// block row of outputs per thread block, so it re-reads X from L2 once per block row and runs
/// wmma from shared memory, while cuBLAS runs close to the tensor cores' peak) that lean
/// towards cuBLAS. No GPU has run either path yet. sparse_gpu_bench (run by
/// benchmarks/gpu_check.sh) ends with the break-even sparsities it measured for the f16 entries
/// (fp16, m = k = n = 4096, against cublasGemmEx), printed as values for this table; bf16 is
/// assumed to break even where fp16 does, and no benchmark measures the f32 entries yet. The
/// choice is made once per weight, without the call's m: a break-even point measured at
/// m = 4096 may not hold for a few rows.
struct break_even_table {
  double half_block16 = 0.90;  ///< f16/bf16, 16x16 blocks (unmeasured)
  double half_block32 = 0.80;  ///< f16/bf16, 32x32 blocks (unmeasured)
  double half_block64 = 0.75;  ///< f16/bf16, 64x64 blocks (unmeasured)
  double f32_wide = 0.80;      ///< f32, blocks at least 16 outputs wide, vs fp32 SGEMM without TF32 (unmeasured)
  double f32_narrow = 0.95;    ///< f32, narrower blocks: the kernel leaves most threads idle (unmeasured)

  /// The threshold for inputs of `type` and blocks of S = op(W)^T that are `width` outputs
  /// by `depth` reduction steps; +infinity (never sparse) for shapes the tensor-core kernel
  /// does not run. Values above 1 also mean never, values <= 0 always.
  [[nodiscard]] double threshold(dtype type, std::int32_t width, std::int32_t depth) const noexcept;
};

/// Which implementation a dispatcher runs.
enum class gemm_path {
  sparse,  ///< the block-sparse kernel (cuda::run)
  dense,   ///< cublasGemmEx on the dense W, then the bias/activation/conversion epilogue
};

/// "sparse" or "dense".
[[nodiscard]] const char* to_string(gemm_path path) noexcept;

/// The per-call inputs of a dispatcher: `bsr_gemm_args` without W, which the dispatcher holds.
/// X has the dispatcher's element type; Y is f32 or that type.
struct gemm_call_args {
  std::int64_t m = 0;                 ///< rows of X and Y
  const void* x = nullptr;            ///< m x k, row-major, device memory
  std::int64_t ldx = 0;               ///< row stride of X, in elements (>= k)
  const float* bias = nullptr;        ///< n fp32 values in device memory, or null
  activation act = activation::none;  ///< applied after the bias
  void* y = nullptr;                  ///< m x n, row-major, device memory
  dtype y_type = dtype::f32;          ///< f32, or the dispatcher's element type
  std::int64_t ldy = 0;               ///< row stride of Y, in elements (>= n)
};

/// Holds a constant weight on the device in the form that multiplies fastest, chosen once from
/// its block sparsity and the break-even table, and computes Y = act(X op(W) + bias) with it.
///
/// - sparse path: W as a `device_bsr_matrix`; `run` is cuda::run.
/// - dense path: W as a dense k x n row-major matrix of the element type; `run` calls
///   cublasGemmEx (fp32 accumulation, CUBLAS_COMPUTE_32F: no TF32 for f32) into Y (f32) or an
///   fp32 workspace, then one epilogue kernel adds the bias, applies the activation and
///   converts to Y's type, so that both paths round once, from fp32, the same way.
///
/// The sparse path is taken when the sparsity reaches the table's threshold and the sparse
/// kernel runs W's block shape for the element type, or when W has no columns to reduce over
/// (k == 0). A call whose X the tensor-core kernel refuses (alignment) is refused by
/// can_implement; nothing falls back at run time, so timing stays predictable.
///
/// Error bound: that of cuda::run on the sparse path; on the dense path cuBLAS's (fp32 sums
/// of exact products for f16/bf16) and the same rounding to Y's type.
/// Thread-safety: not thread-safe (the cuBLAS handle is bound to the stream of each call).
/// Move-only. Requires a CUDA device; the resource must outlive the dispatcher.
class gemm_dispatcher {
 public:
  /// Uploads W for Y = X W (`trans_w` false: W is k x n) or Y = X W^T (`trans_w` true: W is
  /// n x k), as `type`, choosing the path with `table`. Waits for the uploads on `stream`.
  /// @throws memory::out_of_memory from the resource; inferopt::error(errc::internal) when a
  /// CUDA or cuBLAS call fails.
  gemm_dispatcher(const bsr_matrix<float>& w, bool trans_w, dtype type, memory::memory_resource& resource,
                  const break_even_table& table = {}, memory::stream_ref stream = {});
  gemm_dispatcher(gemm_dispatcher&&) noexcept;
  gemm_dispatcher& operator=(gemm_dispatcher&&) noexcept;
  gemm_dispatcher(const gemm_dispatcher&) = delete;
  gemm_dispatcher& operator=(const gemm_dispatcher&) = delete;
  ~gemm_dispatcher();

  [[nodiscard]] gemm_path path() const noexcept;
  [[nodiscard]] dtype type() const noexcept;
  /// W's block sparsity, which chose the path.
  [[nodiscard]] double block_sparsity() const noexcept;
  [[nodiscard]] std::int64_t k() const noexcept;
  [[nodiscard]] std::int64_t n() const noexcept;
  /// The device matrix on the sparse path; null on the dense path.
  [[nodiscard]] const device_bsr_view* sparse_view() const noexcept;

  /// Whether `run` can compute the call, or why not (cuda::can_implement's reasons on the
  /// sparse path; on the dense path: sizes, null pointers, strides, types, dimensions past
  /// cuBLAS's 32-bit int). The argument checks need no device. Never throws.
  [[nodiscard]] kernel_status can_implement(const gemm_call_args& args) const noexcept;
  /// Device scratch bytes `run` needs: 0, except on the dense path with Y not f32 (m * n
  /// floats, 256-byte aligned).
  [[nodiscard]] std::size_t workspace_bytes(const gemm_call_args& args) const noexcept;
  /// Enqueues the product on `stream`. Preconditions: can_implement(args) is ok; `workspace`
  /// is device memory of workspace_bytes(args) bytes. Returns the CUDA or cuBLAS error of the
  /// launches, if any. Never throws.
  kernel_status run(const gemm_call_args& args, std::span<std::byte> workspace, memory::stream_ref stream) noexcept;
  /// can_implement, a workspace from the dispatcher's resource, run.
  /// @throws inferopt::error(errc::invalid_argument) with can_implement's reason;
  ///         inferopt::error(errc::internal) when a launch fails; memory::out_of_memory.
  void operator()(const gemm_call_args& args, memory::stream_ref stream = {});

 private:
  struct state;
  std::unique_ptr<state> state_;  // never null, except in a moved-from dispatcher
};

}  // namespace inferopt::sparse::cuda
