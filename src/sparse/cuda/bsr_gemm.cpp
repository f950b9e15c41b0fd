// The device block-sparse GEMM: argument checks and the choice of kernel (the one place that
// chooses it: tensor cores for f16/bf16, CUDA cores for f32). The kernels are in cuda/sparse/.
#include "inferopt/sparse/cuda/bsr_gemm.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "cuda_check.hpp"
#include "inferopt/core/error.hpp"
#include "launch.hpp"
#include "memory_ranges.hpp"

namespace inferopt::sparse::cuda {

namespace {

constexpr std::int64_t max_index = std::numeric_limits<std::int32_t>::max();

bool is_valid(dtype t) noexcept { return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16; }

std::string shape_string(const device_bsr_view& w) {
  return std::to_string(w.width) + "x" + std::to_string(w.depth);
}

bool aligned16(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The checks that need no device.
kernel_status check_arguments(const bsr_gemm_args& a) {
  const device_bsr_view& w = a.w;
  if (!is_valid(w.type) || !is_valid(a.y_type)) return {"unknown element type"};
  if (w.width < 1 || w.width > block_shape::max_extent || w.depth < 1 || w.depth > block_shape::max_extent) {
    return {"block shape " + shape_string(w) + " is outside 1..64"};
  }
  if (a.m < 0 || w.n < 0 || w.k < 0 || w.nnz_blocks < 0) return {"negative sizes"};
  if (w.out_blocks() > max_index || w.k_blocks() > max_index || w.nnz_blocks > max_index) {
    return {"more than 2^31 - 1 blocks or block rows or columns"};
  }
  if (w.nnz_blocks > w.out_blocks() * w.k_blocks()) return {"w has more stored blocks than its block grid"};
  if (a.y_type != dtype::f32 && a.y_type != w.type) {
    return {std::string("y type ") + to_string(a.y_type) + " is neither f32 nor the input type " + to_string(w.type)};
  }
  const bool tensor_core = w.type != dtype::f32;
  if (tensor_core && (w.width != w.depth || (w.width != 16 && w.width != 32 && w.width != 64))) {
    return {std::string(to_string(w.type)) + ": block " + shape_string(w) +
            ": the tensor-core kernel takes 16x16, 32x32 or 64x64 blocks"};
  }
  const std::int64_t m = a.m;
  const std::int64_t n = w.n;
  const std::int64_t k = w.k;
  if (m == 0 || n == 0) return {};
  if (a.y == nullptr) return {"y is null"};
  if (a.ldy < n) return {"ldy " + std::to_string(a.ldy) + " is less than n " + std::to_string(n)};
  if (k > 0 && a.x == nullptr) return {"x is null"};
  if (a.ldx < k) return {"ldx " + std::to_string(a.ldx) + " is less than k " + std::to_string(k)};
  if (w.row_ptr == nullptr || w.order == nullptr) return {"w.row_ptr or w.order is null"};
  if (w.nnz_blocks > 0 && (w.col_ind == nullptr || w.values == nullptr)) return {"w.col_ind or w.values is null"};
  if (tensor_core && k > 0 && (!aligned16(a.x) || a.ldx % 8 != 0)) {
    return {std::string(to_string(w.type)) + ": x must be 16-byte aligned and ldx (" + std::to_string(a.ldx) +
            ") a multiple of 8"};
  }
  if (tensor_core && w.nnz_blocks > 0 && !aligned16(w.values)) {
    return {std::string(to_string(w.type)) + ": w.values must be 16-byte aligned"};
  }
  const std::int64_t tile_rows =
      tensor_core ? detail::tensor_core_tile_rows(w.width) : detail::cuda_core_tile_rows;
  if ((m + tile_rows - 1) / tile_rows > max_index / w.out_blocks()) {
    return {"more than 2^31 - 1 thread blocks: m " + std::to_string(m) + " is too large for n " + std::to_string(n)};
  }
  const std::size_t y_elem = size_of(a.y_type);
  const auto x_bytes = k > 0 ? ((m - 1) * a.ldx + k) * static_cast<std::int64_t>(size_of(w.type)) : 0;
  if (detail::overlaps(a.y, m, a.ldy, n, y_elem, a.x, x_bytes) ||
      detail::overlaps(a.y, m, a.ldy, n, y_elem, a.bias, a.bias != nullptr ? n * std::int64_t{sizeof(float)} : 0)) {
    return {"y overlaps an input"};
  }
  return {};
}

// The checks of the current device.
kernel_status check_device(const bsr_gemm_args& a) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) return detail::status_of(counted, "no usable cuda device");
  if (count == 0) return {"no cuda device"};
  int device = 0;
  kernel_status got = detail::status_of(cudaGetDevice(&device), "cudaGetDevice");
  if (!got) return got;
  if (a.w.type == dtype::f32) return {};
  int major = 0;
  int minor = 0;
  kernel_status s = detail::status_of(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                                      "cudaDeviceGetAttribute");
  if (!s) return s;
  s = detail::status_of(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                        "cudaDeviceGetAttribute");
  if (!s) return s;
  if (major < 8) {
    return {std::string(to_string(a.w.type)) + ": the tensor-core kernel needs compute capability 8.0, device " +
            std::to_string(device) + " has " + std::to_string(major) + "." + std::to_string(minor)};
  }
  return {};
}

}  // namespace

const char* to_string(dtype type) noexcept {
  switch (type) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
  }
  return "unknown";
}

std::size_t size_of(dtype type) noexcept { return type == dtype::f32 ? 4 : 2; }

kernel_status can_implement(const bsr_gemm_args& args) noexcept {
  try {
    kernel_status s = check_arguments(args);
    if (!s || args.m == 0 || args.w.n == 0) return s;
    return check_device(args);
  } catch (...) {  // only building a message can fail (to allocate)
    return {"out of memory"};
  }
}

std::size_t workspace_bytes(const bsr_gemm_args&) noexcept { return 0; }

kernel_status run(const bsr_gemm_args& a, std::span<std::byte>, memory::stream_ref stream) noexcept {
  if (a.m <= 0 || a.w.n <= 0) return {};
  detail::kernel_params p;
  p.m = a.m;
  p.n = a.w.n;
  p.k = a.w.k;
  p.x = a.x;
  p.ldx = a.ldx;
  p.row_ptr = a.w.row_ptr;
  p.col_ind = a.w.col_ind;
  p.values = a.w.values;
  p.order = a.w.order;
  p.width = a.w.width;
  p.depth = a.w.depth;
  p.out_blocks = a.w.out_blocks();
  p.bias = a.bias;
  p.relu = a.act == activation::relu ? 1 : 0;
  p.y = a.y;
  p.ldy = a.ldy;
  p.y_f32 = a.y_type == dtype::f32 ? 1 : 0;
  auto* s = static_cast<cudaStream_t>(stream.handle);
  cudaError_t launched = cudaErrorInvalidValue;
  switch (a.w.type) {
    case dtype::f32: launched = detail::launch_cuda_core_f32(p, s); break;
    case dtype::f16: launched = detail::launch_tensor_core_f16(p, s); break;
    case dtype::bf16: launched = detail::launch_tensor_core_bf16(p, s); break;
  }
  return detail::status_of(launched, "bsr_gemm: kernel launch");
}

void bsr_gemm(const bsr_gemm_args& args, memory::stream_ref stream) {
  const kernel_status status = can_implement(args);
  if (!status) throw error(errc::invalid_argument, "cuda::bsr_gemm: " + status.reason);
  const kernel_status launched = run(args, {}, stream);
  if (!launched) throw error(errc::internal, "cuda::bsr_gemm: " + launched.reason);
}

}  // namespace inferopt::sparse::cuda
