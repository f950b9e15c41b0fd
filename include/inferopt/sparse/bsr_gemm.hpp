#pragma once
/// Block-sparse GEMM with a constant sparse weight: Y = act(X op(W) + bias), W in BSR.
///
/// Header-only (target inferopt::sparse_kernels): the AVX2 and AVX-512 builds are compiled
/// through function target attributes, so a program that includes this header needs no
/// instruction-set flags, and the build that runs is chosen at run time from the CPU probe.
/// Threads come from OpenMP when the including file is compiled with it (CMake: link
/// OpenMP::OpenMP_CXX, or inferopt::sparse, which does); without OpenMP every call runs on the
/// calling thread. Compile all files of one program that include it with the same choice.

#include <cstddef>
#include <cstdint>
#include <span>

#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/kernel_status.hpp"

namespace inferopt::sparse {

/// The activation fused after the bias.
enum class activation {
  none,
  relu,  ///< max(v, 0); NaN stays NaN
};

/// The inputs of one product Y = act(X op(W) + bias), shared by every implementation.
///
/// - X: m x k, row-major, row stride `ldx` (>= k). fp32.
/// - W: a BSR matrix (see bsr_matrix.hpp), k x n when `trans_w` is false (Y = X W, the
///   layout of an ONNX MatMul weight), n x k when it is true (Y = X W^T, Gemm with transB = 1,
///   a PyTorch Linear weight). Any block shape in 1..64 x 1..64.
/// - bias: n values added to every row of Y, or null.
/// - Y: m x n, row-major, row stride `ldy` (>= n); only written (what it held does not leak
///   into the result). Y must not overlap X, W or bias.
struct bsr_gemm_args {
  std::int64_t m = 0;                 ///< rows of X and Y
  const float* x = nullptr;           ///< m x k
  std::int64_t ldx = 0;               ///< row stride of X, in elements
  bsr_view<const float> w;            ///< k x n, or n x k when trans_w
  bool trans_w = false;               ///< Y = X W^T instead of Y = X W
  const float* bias = nullptr;        ///< n values, or null for none
  activation act = activation::none;  ///< applied after the bias
  float* y = nullptr;                 ///< m x n
  std::int64_t ldy = 0;               ///< row stride of Y, in elements

  [[nodiscard]] std::int64_t k() const noexcept { return trans_w ? w.cols : w.rows; }
  [[nodiscard]] std::int64_t n() const noexcept { return trans_w ? w.rows : w.cols; }
};

/// The instruction-set build a CPU run uses.
enum class cpu_isa {
  automatic,  ///< the widest one this CPU runs: avx512, else avx2, else portable
  portable,   ///< plain C++, any CPU
  avx2,       ///< AVX2 + FMA intrinsics, x86-64 with GCC or Clang only
  avx512,     ///< AVX-512 F, DQ, BW, VL + FMA intrinsics, x86-64 with GCC or Clang only
};

/// Where a CPU run executes: the CPU counterpart of a device kernel's stream.
struct cpu_context {
  int threads = 0;                  ///< OpenMP threads; 0: omp_get_max_threads(). Ignored without OpenMP.
  /// The build to run. Tests and benchmarks pin one to run every build on one machine (a pinned
  /// build the CPU lacks is refused by can_implement); everyone else leaves it automatic.
  cpu_isa isa = cpu_isa::automatic;
};

/// Whether `isa` is compiled in (x86-64 with GCC or Clang) and this CPU runs it (`automatic`
/// and `portable`: always).
[[nodiscard]] inline bool is_available(cpu_isa isa) noexcept;
/// The build `isa` stands for on this CPU: `automatic` resolved, the others unchanged.
[[nodiscard]] inline cpu_isa resolve(cpu_isa isa) noexcept;
/// "automatic", "portable", "avx2" or "avx512": with `resolve`, the name of the build that runs.
[[nodiscard]] inline const char* to_string(cpu_isa isa) noexcept;

/// Whether `run` can compute `args` on `ctx`; the reason when it cannot: negative or
/// inconsistent sizes, null pointers for a non-empty product, leading dimensions below the
/// row length, a block extent outside 1..64, an instruction set that is not available.
/// W's arrays are not re-validated here (a `bsr_matrix` checked them; use `validate` for
/// arrays from elsewhere). Never throws.
[[nodiscard]] inline kernel_status can_implement(const bsr_gemm_args& args, const cpu_context& ctx) noexcept;

/// Bytes of scratch memory `run` needs for `args` on the build `ctx.isa` resolves to: X packed
/// as panels of X^T (their width depends on the build), and for trans_w == false W's
/// block-column index (see below). Any alignment; 64 bytes is best.
[[nodiscard]] inline std::size_t workspace_bytes(const bsr_gemm_args& args, const cpu_context& ctx) noexcept;

/// Computes Y = act(X op(W) + bias) on the CPU.
///
/// Method. The kernel works on the transposed problem Y^T = op(W)^T X^T, one output block
/// (r outputs of W^T's block row) at a time: X is first packed into panels of X^T, P rows of
/// X wide, zero-padded to whole panels and blocks; then each stored block multiplies a
/// 4 x P register tile (4 outputs x P rows of X) by broadcasting one weight and loading P / L
/// vectors of X^T per multiply-add step, where the build sets P and the vector width L:
/// P = 24, L = 8 (twelve ymm accumulators) for avx2 and portable, P = 64, L = 16 (sixteen zmm
/// accumulators) for avx512. The reduction runs over all blocks of the output block before
/// the tile is written once (bias and activation fused, transposed in registers on the way
/// out). Threads own disjoint ranges of output blocks, balanced by stored blocks, and never
/// synchronize after packing.
/// For trans_w == false (W is k x n, block rows run along k), the output blocks are W's
/// block columns; `run` first builds a block-column index of W (O(blocks), in the workspace)
/// and reads W's blocks in place. Micro-kernels are specialized (compile-time depth and
/// strides) for 4x4, 8x8, 16x16 and 32x32 blocks; other shapes take a generic kernel with the
/// same register tile.
///
/// Preconditions: can_implement(args, ctx) is ok; `workspace` holds workspace_bytes(args,
/// ctx) bytes. Not checked (the function never throws); breaking them is undefined.
/// Thread-safety: concurrent calls are fine when their Y and workspaces are distinct.
/// Error bound against the dense float64 product of the same (pruned) W: each output is a
/// float32 sum, in block order with fused multiply-adds, of the k_s products over the stored
/// blocks' columns plus the bias: |error| <= (k_s + 1) * 2^-24 * (sum |x * w| + |bias|).
inline void run(const bsr_gemm_args& args, std::span<std::byte> workspace, const cpu_context& ctx) noexcept;

/// can_implement, a workspace of the right size, run.
/// @throws inferopt::error(errc::invalid_argument) with can_implement's reason.
inline void bsr_gemm(const bsr_gemm_args& args, const cpu_context& ctx = {});

}  // namespace inferopt::sparse

#include "inferopt/sparse/detail/bsr_gemm_impl.hpp"
