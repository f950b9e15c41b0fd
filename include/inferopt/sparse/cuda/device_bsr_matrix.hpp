#pragma once
/// A block-sparse weight uploaded to a CUDA device in the layout of the device kernels.
/// Declared without CUDA headers; defined only in builds with CUDA (INFEROPT_SPARSE_CUDA).

#include <cstdint>
#include <utility>

#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/memory/stream_ref.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/cuda/bsr_gemm.hpp"
#include "inferopt/sparse/cuda/detail/device_buffer.hpp"

namespace inferopt::sparse::cuda {

/// Owns W's BSR arrays in device memory, converted to one element type, in the layout of
/// `device_bsr_view` (S = op(W)^T), with the work order of the kernels.
///
/// Made once per constant weight: the constructor transposes W on the host when needed (for
/// Y = X W, W is k x n and S = W^T), rounds the values to `type` (round to nearest even),
/// sorts the block rows by stored blocks for the work order and copies everything to the
/// device. Move-only. Not thread-safe to move while a kernel reads it.
class device_bsr_matrix {
 public:
  /// An empty matrix (no device memory); view() describes a 0 x 0 weight.
  device_bsr_matrix() noexcept = default;

  /// Uploads W for Y = X W (`trans_w` false: W is k x n, an ONNX MatMul weight) or Y = X W^T
  /// (`trans_w` true: W is n x k, Gemm with transB = 1). Device memory comes from `resource`
  /// (device memory of the current device; it must outlive this matrix), copies are ordered on
  /// `stream`, and the constructor waits for them, so the matrix is ready on any stream when
  /// it returns.
  /// @throws memory::out_of_memory from the resource; inferopt::error(errc::internal) when a
  /// CUDA copy fails.
  device_bsr_matrix(const bsr_matrix<float>& w, bool trans_w, dtype type, memory::memory_resource& resource,
                    memory::stream_ref stream = {});

  device_bsr_matrix(const device_bsr_matrix&) = delete;
  device_bsr_matrix& operator=(const device_bsr_matrix&) = delete;
  /// Takes the device arrays; `other` is left empty.
  device_bsr_matrix(device_bsr_matrix&& other) noexcept
      : view_(std::exchange(other.view_, {})),
        sparsity_(std::exchange(other.sparsity_, 0.0)),
        row_ptr_(std::move(other.row_ptr_)),
        col_ind_(std::move(other.col_ind_)),
        values_(std::move(other.values_)),
        order_(std::move(other.order_)) {}
  device_bsr_matrix& operator=(device_bsr_matrix&& other) noexcept {
    device_bsr_matrix(std::move(other)).swap(*this);
    return *this;
  }
  ~device_bsr_matrix() = default;

  /// The device arrays, borrowed; valid while this matrix lives.
  [[nodiscard]] const device_bsr_view& view() const noexcept { return view_; }
  [[nodiscard]] dtype type() const noexcept { return view_.type; }
  /// The block sparsity of W: the fraction of its block grid that is not stored, in [0, 1].
  [[nodiscard]] double block_sparsity() const noexcept { return sparsity_; }

 private:
  void swap(device_bsr_matrix& other) noexcept {
    std::swap(view_, other.view_);
    std::swap(sparsity_, other.sparsity_);
    std::swap(row_ptr_, other.row_ptr_);
    std::swap(col_ind_, other.col_ind_);
    std::swap(values_, other.values_);
    std::swap(order_, other.order_);
  }

  device_bsr_view view_;  // points into the buffers below
  double sparsity_ = 0.0;
  detail::device_buffer row_ptr_;
  detail::device_buffer col_ind_;
  detail::device_buffer values_;
  detail::device_buffer order_;
};

}  // namespace inferopt::sparse::cuda
