// Uploading a constant block-sparse weight: transpose to S = op(W)^T on the host when needed,
// round the values to the device type, build the work order, copy.
#include "inferopt/sparse/cuda/device_bsr_matrix.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <span>
#include <vector>

#include "cuda_check.hpp"

namespace inferopt::sparse::cuda {

namespace {

// The values in `type`, round to nearest even (the CUDA conversions, which run on the host).
std::vector<std::byte> convert(std::span<const float> values, dtype type) {
  std::vector<std::byte> out(values.size() * size_of(type));
  switch (type) {
    case dtype::f32:
      if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
      break;
    case dtype::f16:
      for (std::size_t i = 0; i < values.size(); ++i) {
        const __half h = __float2half_rn(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    case dtype::bf16:
      for (std::size_t i = 0; i < values.size(); ++i) {
        const __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
  }
  return out;
}

// The block rows of S, those with more stored blocks first (ties in index order), so that the
// kernels start their longest work items first.
std::vector<std::int32_t> work_order(std::span<const std::int32_t> row_ptr) {
  std::vector<std::int32_t> order(row_ptr.empty() ? 0 : row_ptr.size() - 1);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return row_ptr[a + 1] - row_ptr[a] > row_ptr[b + 1] - row_ptr[b];
  });
  return order;
}

detail::device_buffer upload(memory::memory_resource& resource, const void* host, std::size_t bytes,
                             memory::stream_ref stream) {
  detail::device_buffer buffer(resource, bytes, stream);
  if (bytes > 0) {
    detail::check(cudaMemcpyAsync(buffer.data(), host, bytes, cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(stream.handle)),
                  "device_bsr_matrix: cudaMemcpyAsync");
  }
  return buffer;
}

}  // namespace

device_bsr_matrix::device_bsr_matrix(const bsr_matrix<float>& w, bool trans_w, dtype type,
                                     memory::memory_resource& resource, memory::stream_ref stream) {
  // S = op(W)^T: W itself for Y = X W^T, its transpose for Y = X W.
  std::optional<bsr_matrix<float>> transposed;
  const bsr_matrix<float>& s = trans_w ? w : transposed.emplace(w.transposed());
  const std::vector<std::int32_t> order = work_order(s.row_ptr());
  const std::vector<std::byte> values = convert(s.values(), type);

  row_ptr_ = upload(resource, s.row_ptr().data(), s.row_ptr().size_bytes(), stream);
  col_ind_ = upload(resource, s.col_ind().data(), s.col_ind().size_bytes(), stream);
  values_ = upload(resource, values.data(), values.size(), stream);
  order_ = upload(resource, order.data(), order.size() * sizeof(std::int32_t), stream);
  // The host arrays above die with this scope; wait for the copies.
  detail::check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle)),
                "device_bsr_matrix: cudaStreamSynchronize");

  view_.n = s.rows();
  view_.k = s.cols();
  view_.width = s.block().rows;
  view_.depth = s.block().cols;
  view_.nnz_blocks = s.nnz_blocks();
  view_.type = type;
  view_.row_ptr = static_cast<const std::int32_t*>(row_ptr_.data());
  view_.col_ind = static_cast<const std::int32_t*>(col_ind_.data());
  view_.values = values_.data();
  view_.order = static_cast<const std::int32_t*>(order_.data());
  sparsity_ = w.block_sparsity();
}

}  // namespace inferopt::sparse::cuda
