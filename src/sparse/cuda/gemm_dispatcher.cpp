// The choice between the block-sparse kernel and cuBLAS dense for a constant weight, and the
// dense path itself (cublasGemmEx, then the bias/activation/conversion epilogue).
#include "inferopt/sparse/cuda/gemm_dispatcher.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/sparse/cuda/device_bsr_matrix.hpp"
#include "launch.hpp"
#include "memory_ranges.hpp"

namespace inferopt::sparse::cuda {

namespace {

constexpr std::int64_t max_int = std::numeric_limits<int>::max();

// The epilogue takes Y's type as launch.hpp's element_type, which numbers the types alike.
static_assert(static_cast<int>(dtype::f32) == static_cast<int>(detail::element_type::f32) &&
              static_cast<int>(dtype::f16) == static_cast<int>(detail::element_type::f16) &&
              static_cast<int>(dtype::bf16) == static_cast<int>(detail::element_type::bf16));

// Whether the block-sparse kernel runs blocks of S of this shape for this element type.
bool sparse_kernel_runs(dtype type, std::int32_t width, std::int32_t depth) noexcept {
  if (type == dtype::f32) return true;
  return width == depth && (width == 16 || width == 32 || width == 64);
}

cudaDataType_t cuda_type(dtype type) noexcept {
  switch (type) {
    case dtype::f32: return CUDA_R_32F;
    case dtype::f16: return CUDA_R_16F;
    case dtype::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

// op(W) as a dense k x n row-major matrix in `type`.
std::vector<std::byte> dense_weight(const bsr_matrix<float>& w, bool trans_w, dtype type) {
  const std::vector<float> stored = w.to_dense();  // rows x cols of W
  const std::int64_t k = trans_w ? w.cols() : w.rows();
  const std::int64_t n = trans_w ? w.rows() : w.cols();
  std::vector<std::byte> out(static_cast<std::size_t>(k * n) * size_of(type));
  for (std::int64_t r = 0; r < k; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      const float v = trans_w ? stored[static_cast<std::size_t>(c * k + r)] : stored[static_cast<std::size_t>(r * n + c)];
      std::byte* at = out.data() + static_cast<std::size_t>(r * n + c) * size_of(type);
      if (type == dtype::f32) {
        std::memcpy(at, &v, 4);
      } else if (type == dtype::f16) {
        const __half h = __float2half_rn(v);
        std::memcpy(at, &h, 2);
      } else {
        const __nv_bfloat16 h = __float2bfloat16_rn(v);
        std::memcpy(at, &h, 2);
      }
    }
  }
  return out;
}

kernel_status cublas_status(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  return {std::string(what) + ": " + cublasGetStatusString(status)};
}

}  // namespace

double break_even_table::threshold(dtype type, std::int32_t width, std::int32_t depth) const noexcept {
  if (type == dtype::f32) return width >= 16 ? f32_wide : f32_narrow;
  if (width != depth) return std::numeric_limits<double>::infinity();
  switch (width) {
    case 16: return half_block16;
    case 32: return half_block32;
    case 64: return half_block64;
    default: return std::numeric_limits<double>::infinity();
  }
}

const char* to_string(gemm_path path) noexcept { return path == gemm_path::sparse ? "sparse" : "dense"; }

struct gemm_dispatcher::state {
  memory::memory_resource* resource = nullptr;
  dtype type = dtype::f32;
  gemm_path path = gemm_path::dense;
  double sparsity = 0.0;
  std::int64_t k = 0;
  std::int64_t n = 0;
  device_bsr_matrix sparse;      // the sparse path's weight
  detail::device_buffer dense;   // the dense path's weight: k x n, row-major, `type`
  cublasHandle_t handle = nullptr;  // the dense path's, owned

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state() {
    if (handle != nullptr) (void)cublasDestroy(handle);
  }
};

gemm_dispatcher::gemm_dispatcher(const bsr_matrix<float>& w, bool trans_w, dtype type,
                                 memory::memory_resource& resource, const break_even_table& table,
                                 memory::stream_ref stream)
    : state_(std::make_unique<state>()) {
  state& s = *state_;
  s.resource = &resource;
  s.type = type;
  s.sparsity = w.block_sparsity();
  s.k = trans_w ? w.cols() : w.rows();
  s.n = trans_w ? w.rows() : w.cols();
  // S = op(W)^T has blocks of `width` outputs by `depth` reduction steps.
  const std::int32_t width = trans_w ? w.block().rows : w.block().cols;
  const std::int32_t depth = trans_w ? w.block().cols : w.block().rows;
  const bool runs = sparse_kernel_runs(type, width, depth);
  s.path = runs && (s.k == 0 || s.sparsity >= table.threshold(type, width, depth)) ? gemm_path::sparse
                                                                                   : gemm_path::dense;
  if (s.path == gemm_path::sparse) {
    s.sparse = device_bsr_matrix(w, trans_w, type, resource, stream);
    return;
  }
  const std::vector<std::byte> dense = dense_weight(w, trans_w, type);
  s.dense = detail::device_buffer(resource, dense.size(), stream);
  auto* cs = static_cast<cudaStream_t>(stream.handle);
  if (!dense.empty()) {
    detail::check(cudaMemcpyAsync(s.dense.data(), dense.data(), dense.size(), cudaMemcpyHostToDevice, cs),
                  "gemm_dispatcher: cudaMemcpyAsync");
  }
  detail::check(cudaStreamSynchronize(cs), "gemm_dispatcher: cudaStreamSynchronize");
  const kernel_status created = cublas_status(cublasCreate(&s.handle), "gemm_dispatcher: cublasCreate");
  if (!created) throw error(errc::internal, created.reason);
}

gemm_dispatcher::gemm_dispatcher(gemm_dispatcher&&) noexcept = default;
gemm_dispatcher& gemm_dispatcher::operator=(gemm_dispatcher&&) noexcept = default;
gemm_dispatcher::~gemm_dispatcher() = default;

gemm_path gemm_dispatcher::path() const noexcept { return state_->path; }
dtype gemm_dispatcher::type() const noexcept { return state_->type; }
double gemm_dispatcher::block_sparsity() const noexcept { return state_->sparsity; }
std::int64_t gemm_dispatcher::k() const noexcept { return state_->k; }
std::int64_t gemm_dispatcher::n() const noexcept { return state_->n; }

const device_bsr_view* gemm_dispatcher::sparse_view() const noexcept {
  return state_->path == gemm_path::sparse ? &state_->sparse.view() : nullptr;
}

namespace {

bsr_gemm_args sparse_args(const gemm_call_args& a, const device_bsr_view& w) noexcept {
  bsr_gemm_args b;
  b.m = a.m;
  b.x = a.x;
  b.ldx = a.ldx;
  b.w = w;
  b.bias = a.bias;
  b.act = a.act;
  b.y = a.y;
  b.y_type = a.y_type;
  b.ldy = a.ldy;
  return b;
}

// The dense path's checks: what cublasGemmEx and the epilogue need.
kernel_status check_dense(const gemm_call_args& a, dtype type, std::int64_t k, std::int64_t n) {
  if (a.y_type != dtype::f32 && a.y_type != type) {
    return {std::string("y type ") + to_string(a.y_type) + " is neither f32 nor the input type " + to_string(type)};
  }
  if (a.m < 0) return {"negative sizes"};
  if (a.m == 0 || n == 0) return {};
  if (a.y == nullptr) return {"y is null"};
  if (a.ldy < n) return {"ldy " + std::to_string(a.ldy) + " is less than n " + std::to_string(n)};
  if (k > 0 && a.x == nullptr) return {"x is null"};
  if (a.ldx < k) return {"ldx " + std::to_string(a.ldx) + " is less than k " + std::to_string(k)};
  if (k > 0 && (a.m > max_int || n > max_int || k > max_int || a.ldx > max_int || a.ldy > max_int)) {
    return {"dense path: a dimension or stride exceeds cuBLAS's 32-bit int"};
  }
  const std::size_t y_elem = size_of(a.y_type);
  const auto x_bytes = k > 0 ? ((a.m - 1) * a.ldx + k) * static_cast<std::int64_t>(size_of(type)) : 0;
  if (detail::overlaps(a.y, a.m, a.ldy, n, y_elem, a.x, x_bytes) ||
      detail::overlaps(a.y, a.m, a.ldy, n, y_elem, a.bias, a.bias != nullptr ? n * std::int64_t{sizeof(float)} : 0)) {
    return {"y overlaps an input"};
  }
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) return detail::status_of(counted, "no usable cuda device");
  if (count == 0) return {"no cuda device"};
  return {};
}

}  // namespace

kernel_status gemm_dispatcher::can_implement(const gemm_call_args& args) const noexcept {
  try {
    const state& s = *state_;
    if (s.path == gemm_path::sparse) return cuda::can_implement(sparse_args(args, s.sparse.view()));
    return check_dense(args, s.type, s.k, s.n);
  } catch (...) {  // only building a message can fail (to allocate)
    return {"out of memory"};
  }
}

std::size_t gemm_dispatcher::workspace_bytes(const gemm_call_args& args) const noexcept {
  const state& s = *state_;
  if (s.path == gemm_path::sparse || args.y_type == dtype::f32 || args.m <= 0 || s.n <= 0) return 0;
  const auto bytes = static_cast<std::size_t>(args.m * s.n) * sizeof(float);
  return (bytes + memory::default_alignment - 1) / memory::default_alignment * memory::default_alignment;
}

kernel_status gemm_dispatcher::run(const gemm_call_args& args, std::span<std::byte> workspace,
                                   memory::stream_ref stream) noexcept {
  state& s = *state_;
  if (s.path == gemm_path::sparse) return cuda::run(sparse_args(args, s.sparse.view()), workspace, stream);
  if (args.m <= 0 || s.n <= 0) return {};
  try {
    auto* cs = static_cast<cudaStream_t>(stream.handle);
    // The fp32 product goes to Y when Y is fp32 (the epilogue then works in place), otherwise
    // to the workspace, which the epilogue converts into Y.
    const bool y_f32 = args.y_type == dtype::f32;
    auto* product = y_f32 ? static_cast<float*>(args.y) : reinterpret_cast<float*>(workspace.data());
    const std::int64_t ld_product = y_f32 ? args.ldy : s.n;
    const float* src = nullptr;  // k == 0: the product is zero
    if (s.k > 0) {
      kernel_status st = cublas_status(cublasSetStream(s.handle, cs), "gemm_dispatcher: cublasSetStream");
      if (!st) return st;
      // Row-major Y = X W is column-major Y^T = W^T X^T: W (k x n row-major) is W^T column-major
      // with leading dimension n, X (row-major, ldx) is X^T column-major with leading dimension ldx.
      const float alpha = 1.0F;
      const float beta = 0.0F;
      st = cublas_status(cublasGemmEx(s.handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s.n),
                                      static_cast<int>(args.m), static_cast<int>(s.k), &alpha, s.dense.data(),
                                      cuda_type(s.type), static_cast<int>(s.n), args.x, cuda_type(s.type),
                                      static_cast<int>(args.ldx), &beta, product, CUDA_R_32F,
                                      static_cast<int>(ld_product), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         "gemm_dispatcher: cublasGemmEx");
      if (!st) return st;
      if (y_f32 && args.bias == nullptr && args.act == activation::none) return {};
      src = product;
    }
    const auto y_type = static_cast<detail::element_type>(static_cast<int>(args.y_type));
    return detail::status_of(detail::launch_dense_epilogue(src, ld_product, args.y, y_type, args.ldy, args.m, s.n,
                                                           args.bias, args.act == activation::relu ? 1 : 0, cs),
                             "gemm_dispatcher: epilogue launch");
  } catch (...) {  // only building a message can fail (to allocate)
    return {"out of memory"};
  }
}

void gemm_dispatcher::operator()(const gemm_call_args& args, memory::stream_ref stream) {
  const kernel_status status = can_implement(args);
  if (!status) throw error(errc::invalid_argument, "gemm_dispatcher: " + status.reason);
  const std::size_t bytes = workspace_bytes(args);
  detail::device_buffer workspace;
  if (bytes > 0) workspace = detail::device_buffer(*state_->resource, bytes, stream);
  const kernel_status launched =
      run(args, std::span<std::byte>(static_cast<std::byte*>(workspace.data()), bytes), stream);
  if (!launched) throw error(errc::internal, "gemm_dispatcher: " + launched.reason);
}

}  // namespace inferopt::sparse::cuda
