#pragma once
/// Block-sparse GEMM on a CUDA device: Y = act(X op(W) + bias) with a constant W in BSR form.
/// Declared without CUDA headers; defined only in builds with CUDA (INFEROPT_SPARSE_CUDA),
/// like every header of this folder.

#include <cstddef>
#include <cstdint>
#include <span>

#include "inferopt/memory/stream_ref.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/kernel_status.hpp"

namespace inferopt::sparse::cuda {

/// Element types of the device kernels.
enum class dtype : std::uint8_t {
  f32,   ///< IEEE binary32
  f16,   ///< IEEE binary16 (`__half`)
  bf16,  ///< bfloat16 (`__nv_bfloat16`)
};

/// "f32", "f16" or "bf16".
[[nodiscard]] const char* to_string(dtype type) noexcept;
/// Bytes per element: 4 or 2.
[[nodiscard]] std::size_t size_of(dtype type) noexcept;

/// A block-sparse weight in device memory, in the layout the device kernels read (borrowed;
/// `device_bsr_matrix` owns one and makes it from a host `bsr_matrix`).
///
/// Layout: the BSR arrays of S = op(W)^T, an n x k matrix, with the conventions of
/// `bsr_matrix` (sorted unique block columns, column-major blocks, zeros stored outside the
/// matrix). Block rows of S run along the outputs (columns of Y), block columns along the
/// reduction. Stored block b is `width` x `depth`, column-major, which is W's depth x width
/// sub-block row-major: W(kb * depth + kk, j * width + nn) sits at
/// values[b * depth * width + kk * width + nn] for the block b at block row j, block column kb.
/// The kernels multiply a slice of X by such a block without transposing anything.
struct device_bsr_view {
  std::int64_t n = 0;                     ///< outputs: rows of S, columns of Y
  std::int64_t k = 0;                     ///< reduction length: columns of S and of X
  std::int32_t width = 0;                 ///< block extent along n, 1..64
  std::int32_t depth = 0;                 ///< block extent along k, 1..64
  std::int64_t nnz_blocks = 0;            ///< stored blocks
  dtype type = dtype::f32;                ///< element type of `values` (and of X)
  const std::int32_t* row_ptr = nullptr;  ///< out_blocks() + 1 entries
  const std::int32_t* col_ind = nullptr;  ///< nnz_blocks entries: block column, along k
  const void* values = nullptr;           ///< nnz_blocks * width * depth elements of `type`
  /// out_blocks() entries: every block row once, those with more stored blocks first. The
  /// kernels hand out their work in this order (see `run`).
  const std::int32_t* order = nullptr;

  [[nodiscard]] std::int64_t out_blocks() const noexcept { return width > 0 ? (n + width - 1) / width : 0; }
  [[nodiscard]] std::int64_t k_blocks() const noexcept { return depth > 0 ? (k + depth - 1) / depth : 0; }
};

/// The inputs of one device product Y = act(X op(W) + bias). Every pointer is device memory
/// of the current device.
///
/// Why not the CPU's `sparse::bsr_gemm_args`: that one is fp32-only and takes W as the user
/// stores it (W or W^T, with a per-call block-column index for W). The device kernels take
/// several element types and read W in one layout, prepared once at upload (device_bsr_view),
/// so building that index on every call is not needed. The fields otherwise mean the same.
///
/// - X: m x k, row-major, row stride `ldx` (>= k), elements of w.type.
/// - Y: m x n, row-major, row stride `ldy` (>= n), elements of `y_type`: f32, or w.type (one
///   rounding from the fp32 result). Only written; columns past n are left alone.
/// - bias: n fp32 values, or null.
struct bsr_gemm_args {
  std::int64_t m = 0;                 ///< rows of X and Y
  const void* x = nullptr;            ///< m x k
  std::int64_t ldx = 0;               ///< row stride of X, in elements
  device_bsr_view w;                  ///< S = op(W)^T, n x k
  const float* bias = nullptr;        ///< n values, or null for none
  activation act = activation::none;  ///< applied after the bias
  void* y = nullptr;                  ///< m x n
  dtype y_type = dtype::f32;          ///< f32, or w.type
  std::int64_t ldy = 0;               ///< row stride of Y, in elements

  [[nodiscard]] std::int64_t k() const noexcept { return w.k; }
  [[nodiscard]] std::int64_t n() const noexcept { return w.n; }
};

/// Whether `run` can compute `args` on the current device; the reason when it cannot:
/// negative or inconsistent sizes, null pointers for a non-empty product, leading dimensions
/// below the row length, a block extent outside 1..64, a Y type that is neither f32 nor the
/// input type, Y overlapping X or the bias, a grid of more than 2^31 - 1 thread blocks; for
/// f16/bf16: a block that is not 16x16, 32x32 or 64x64, X not 16-byte aligned or `ldx` not
/// a multiple of 8, values not 16-byte aligned, a device below compute capability 8.0; no
/// CUDA device. The checks on the arguments come before any CUDA call, so a refusal for the
/// arguments does not need a device. W's arrays are not read (they are device memory; a
/// `device_bsr_matrix` was checked on the host). Never throws.
[[nodiscard]] kernel_status can_implement(const bsr_gemm_args& args) noexcept;

/// Bytes of device scratch memory `run` needs: 0 (the kernels write Y directly).
[[nodiscard]] std::size_t workspace_bytes(const bsr_gemm_args& args) noexcept;

/// Enqueues Y = act(X op(W) + bias) on `stream` (the default stream when its handle is null).
///
/// Kernels. f16/bf16: tensor cores through wmma 16x16x16 with fp32 accumulators, square
/// blocks of 16, 32 or 64; one thread block of 4 warps computes 128 rows x one block row of
/// S (64 rows for 64x64 blocks), streaming the stored blocks and the matching slices of X
/// through shared memory with cp.async, 2 or 3 stages deep. f32: CUDA cores, any block shape,
/// 64 rows x up to 64 columns per thread block, a 4 x 4 register tile per thread. Both write
/// each tile of Y once, with the bias and the activation fused, and are deterministic.
///
/// Load balance. The grid is a work list of (block row, 128 or 64 rows of X) items taken in
/// the order of w.order, longest block rows first, so that the block scheduler starts the
/// long items first and fills the tail with short ones (empty block rows cost one store).
///
/// Preconditions: can_implement(args) is ok; `workspace` holds workspace_bytes(args) bytes;
/// X, W and the bias are not written by other work on the stream until the product is done.
/// Not checked; breaking them is undefined.
///
/// Error bound against the dense float64 product of the same inputs (X and W as rounded to
/// w.type): fp32 (CUDA cores): each output is a float32 sum with fused multiply-adds in block
/// order, |error| <= (k_s + 1) * 2^-24 * (sum |x * w| + |bias|), k_s the stored columns of
/// the output's block row. f16/bf16: the products are exact in fp32 and summed in fp32 by the
/// tensor cores in an unspecified order; the tests allow (k + 32) * 2^-22 * (sum |x * w| +
/// |bias|), plus the rounding to Y's type (2^-11 relative for f16, 2^-8 for bf16).
///
/// @return ok, or the CUDA error the launch reported (cudaGetLastError after the launch, so
/// an earlier asynchronous error on this thread's device shows up here as well).
/// Thread-safety: concurrent calls are fine when their Y are distinct. Never throws.
kernel_status run(const bsr_gemm_args& args, std::span<std::byte> workspace, memory::stream_ref stream) noexcept;

/// can_implement, then run (the kernels need no workspace).
/// @throws inferopt::error(errc::invalid_argument) with can_implement's reason;
///         inferopt::error(errc::internal) when the launch fails.
void bsr_gemm(const bsr_gemm_args& args, memory::stream_ref stream = {});

}  // namespace inferopt::sparse::cuda
