#pragma once
// Shared by the device GEMM tests: skipping without a device, device copies, random
// block-sparse problems with inputs rounded to the device type, and the float64 reference
// with the error bounds the kernels document.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "inferopt/memory/cuda/device.hpp"
#include "inferopt/memory/memory_resource.hpp"
#include "inferopt/sparse/bsr_matrix.hpp"
#include "inferopt/sparse/cuda/bsr_gemm.hpp"
#include "inferopt/sparse/cuda/detail/device_buffer.hpp"
#include "support/random_values.hpp"

namespace sparse_gpu_test {

namespace sp = inferopt::sparse;
namespace spc = inferopt::sparse::cuda;

// Exits with code 4 (ctest: skipped) when there is no device.
inline void skip_without_device() {
  if (inferopt::memory::cuda::device_count() == 0) {
    std::cout << "no CUDA device: skipped\n";
    std::exit(4);
  }
}

inline void require_cuda(cudaError_t status) {
  INFO(cudaGetErrorString(status));
  REQUIRE(status == cudaSuccess);
}

// A host value rounded to `type` (round to nearest even) and back.
inline float round_to(spc::dtype type, float v) {
  switch (type) {
    case spc::dtype::f16: return __half2float(__float2half_rn(v));
    case spc::dtype::bf16: return __bfloat162float(__float2bfloat16_rn(v));
    case spc::dtype::f32: break;
  }
  return v;
}

// Host floats as the bytes of `type` (each value must already be representable for an exact copy).
inline std::vector<std::byte> encode(std::span<const float> values, spc::dtype type) {
  std::vector<std::byte> out(values.size() * spc::size_of(type));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::byte* at = out.data() + i * spc::size_of(type);
    if (type == spc::dtype::f32) {
      std::memcpy(at, &values[i], 4);
    } else if (type == spc::dtype::f16) {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(at, &h, 2);
    } else {
      const __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
      std::memcpy(at, &h, 2);
    }
  }
  return out;
}

inline std::vector<float> decode(std::span<const std::byte> bytes, spc::dtype type) {
  const std::size_t count = bytes.size() / spc::size_of(type);
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* at = bytes.data() + i * spc::size_of(type);
    if (type == spc::dtype::f32) {
      std::memcpy(&out[i], at, 4);
    } else if (type == spc::dtype::f16) {
      __half h;
      std::memcpy(&h, at, 2);
      out[i] = __half2float(h);
    } else {
      __nv_bfloat16 h;
      std::memcpy(&h, at, 2);
      out[i] = __bfloat162float(h);
    }
  }
  return out;
}

// Device memory with host copies in and out (synchronous, on the default stream).
class device_bytes {
 public:
  device_bytes(inferopt::memory::memory_resource& resource, std::size_t bytes) : buffer_(resource, bytes, {}) {}
  device_bytes(inferopt::memory::memory_resource& resource, std::span<const std::byte> host)
      : buffer_(resource, host.size(), {}) {
    if (!host.empty()) require_cuda(cudaMemcpy(buffer_.data(), host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  [[nodiscard]] void* data() const { return buffer_.data(); }
  [[nodiscard]] std::size_t size() const { return buffer_.size(); }
  void fill(unsigned char byte) {
    if (size() > 0) require_cuda(cudaMemset(data(), byte, size()));
  }
  [[nodiscard]] std::vector<std::byte> download() const {
    std::vector<std::byte> host(size());
    if (size() > 0) require_cuda(cudaMemcpy(host.data(), data(), size(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  spc::detail::device_buffer buffer_;
};

// `count` values uniform in [-1, 1] from the tests' shared seeded helper, rounded to `type`.
inline std::vector<float> random_values(std::size_t count, std::uint32_t seed, spc::dtype type) {
  std::vector<float> out = inferopt::test::random_values(count, seed);
  for (float& v : out) v = round_to(type, v);
  return out;
}

// One random product. W as stored: k x n, or n x k when trans_w; its blocks are kept with
// probability `density` (1: all, 0: none), and the output blocks listed in `empty_outputs`
// are dropped entirely (empty block rows of S).
struct problem {
  std::int64_t m = 0, k = 0, n = 0;
  sp::block_shape block{};  // of W as stored
  double density = 1.0;
  bool trans_w = false;
  spc::dtype type = spc::dtype::f16;
  spc::dtype y_type = spc::dtype::f32;
  bool bias_relu = false;
  std::vector<std::int64_t> empty_outputs{};
  // Output block j keeps its blocks with probability density * (j + 1) / out_blocks instead:
  // block rows of very different lengths, for the work order.
  bool uneven = false;
};

struct instance {
  std::int64_t ldx = 0;  // a multiple of 8 past k: the tensor-core kernel needs it
  std::int64_t ldy = 0;
  std::vector<float> x;  // m x ldx, rounded to the type; NaN past column k
  sp::bsr_matrix<float> w;
  std::vector<float> bias;  // n values when bias_relu, else empty
};

// X, W, the bias and the block coins each come from their own seed derived from `seed`.
inline instance make_instance(const problem& p, unsigned seed) {
  const std::uint32_t base = 4U * seed;
  instance in;
  in.ldx = (p.k + 8) / 8 * 8 + 8;  // always some padding, poisoned with NaN
  in.ldy = p.n + 3;
  in.x = random_values(static_cast<std::size_t>(p.m * in.ldx), base, p.type);
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = p.k; j < in.ldx; ++j) in.x[static_cast<std::size_t>(i * in.ldx + j)] = std::nanf("");
  }
  const std::int64_t rows = p.trans_w ? p.n : p.k;
  const std::int64_t cols = p.trans_w ? p.k : p.n;
  auto dense = random_values(static_cast<std::size_t>(rows * cols), base + 1, p.type);
  const std::int64_t block_rows = (rows + p.block.rows - 1) / p.block.rows;
  const std::int64_t block_cols = (cols + p.block.cols - 1) / p.block.cols;
  const std::int64_t out_blocks = p.trans_w ? block_rows : block_cols;
  std::mt19937 rng(base + 2);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (std::int64_t bi = 0; bi < block_rows; ++bi) {
    for (std::int64_t bj = 0; bj < block_cols; ++bj) {
      const std::int64_t out = p.trans_w ? bi : bj;
      double keep = p.density;
      if (p.uneven) keep = p.density * static_cast<double>(out + 1) / static_cast<double>(out_blocks);
      bool kept = keep >= 1.0 || coin(rng) < keep;
      for (std::int64_t e : p.empty_outputs) kept = kept && e != out;
      if (kept) continue;
      for (std::int64_t i = bi * p.block.rows; i < std::min(rows, (bi + 1) * p.block.rows); ++i) {
        for (std::int64_t j = bj * p.block.cols; j < std::min(cols, (bj + 1) * p.block.cols); ++j) {
          dense[static_cast<std::size_t>(i * cols + j)] = 0.0F;
        }
      }
    }
  }
  in.w = sp::bsr_matrix<float>::from_dense(dense, rows, cols, p.block);
  if (p.bias_relu) in.bias = random_values(static_cast<std::size_t>(p.n), base + 3, spc::dtype::f32);
  return in;
}

// The float64 product act(X op(W) + bias) and, per output, sum |x w| + |bias|.
struct reference {
  std::vector<double> y;          // m x n
  std::vector<double> magnitude;  // m x n
};

inline reference compute_reference(const problem& p, const instance& in) {
  const std::vector<float> wd = in.w.to_dense();
  // op(W) as k x n row-major doubles, so that the inner loop runs along n.
  std::vector<double> w(static_cast<std::size_t>(p.k * p.n));
  for (std::int64_t r = 0; r < p.k; ++r) {
    for (std::int64_t c = 0; c < p.n; ++c) {
      w[static_cast<std::size_t>(r * p.n + c)] =
          p.trans_w ? wd[static_cast<std::size_t>(c * p.k + r)] : wd[static_cast<std::size_t>(r * p.n + c)];
    }
  }
  reference ref;
  ref.y.assign(static_cast<std::size_t>(p.m * p.n), 0.0);
  ref.magnitude.assign(static_cast<std::size_t>(p.m * p.n), 0.0);
  for (std::int64_t i = 0; i < p.m; ++i) {
    double* y = ref.y.data() + i * p.n;
    double* mag = ref.magnitude.data() + i * p.n;
    for (std::int64_t r = 0; r < p.k; ++r) {
      const double xv = in.x[static_cast<std::size_t>(i * in.ldx + r)];
      const double* wr = w.data() + r * p.n;
      for (std::int64_t c = 0; c < p.n; ++c) {
        y[c] += xv * wr[c];
        mag[c] += std::abs(xv * wr[c]);
      }
    }
    if (!p.bias_relu) continue;
    for (std::int64_t c = 0; c < p.n; ++c) {
      const double b = in.bias[static_cast<std::size_t>(c)];
      y[c] = std::max(y[c] + b, 0.0);
      mag[c] += std::abs(b);
    }
  }
  return ref;
}

// How far the device may be from the float64 reference (see cuda/bsr_gemm.hpp): f32 inputs
// (CUDA cores, fused multiply-adds in order): (k + 2) * 2^-24 * magnitude; f16/bf16 inputs
// (exact products, fp32 sums on the tensor cores or in cuBLAS, order unknown): (k + 32) *
// 2^-22 * magnitude; plus the rounding of the result to Y's type.
inline double error_bound(const problem& p, double exact, double magnitude) {
  const auto k = static_cast<double>(p.k);
  double bound = p.type == spc::dtype::f32 ? (k + 2) * std::ldexp(1.0, -24) * magnitude
                                           : (k + 32) * std::ldexp(1.0, -22) * magnitude;
  if (p.y_type == spc::dtype::f16) bound += std::ldexp(1.0, -11) * std::abs(exact) + std::ldexp(1.0, -24);
  if (p.y_type == spc::dtype::bf16) bound += std::ldexp(1.0, -8) * std::abs(exact) + 1e-38;
  return bound;
}

// Every output within its bound (NaN fails), the padding past n untouched (still NaN from the
// poison), and the relative Frobenius error of the whole product under `frobenius_limit`.
inline void require_close(const problem& p, const instance& in, const reference& ref, std::span<const float> y,
                          double frobenius_limit) {
  std::int64_t bad = 0;
  std::int64_t padding_written = 0;
  std::string first;
  double diff2 = 0.0;
  double ref2 = 0.0;
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const double got = y[static_cast<std::size_t>(i * in.ldy + j)];
      const double exact = ref.y[static_cast<std::size_t>(i * p.n + j)];
      const double bound = error_bound(p, exact, ref.magnitude[static_cast<std::size_t>(i * p.n + j)]);
      diff2 += (got - exact) * (got - exact);
      ref2 += exact * exact;
      if (std::abs(got - exact) <= bound) continue;  // false for NaN
      if (bad++ == 0) {
        std::ostringstream s;
        s << "y(" << i << ", " << j << ") = " << got << ", reference " << exact << ", bound " << bound;
        first = s.str();
      }
    }
    for (std::int64_t j = p.n; j < in.ldy; ++j) {
      if (!std::isnan(y[static_cast<std::size_t>(i * in.ldy + j)])) ++padding_written;
    }
  }
  INFO("outputs out of bound: " << bad << " of " << p.m * p.n << (bad > 0 ? "; first: " + first : std::string()));
  CHECK(bad == 0);
  CHECK(padding_written == 0);
  if (ref2 > 0.0) {
    const double relative = std::sqrt(diff2 / ref2);
    INFO("relative Frobenius error " << relative);
    CHECK(relative < frobenius_limit);
  }
}

// The relative Frobenius error expected at most for Y's type (inputs already rounded).
inline double frobenius_limit(spc::dtype y_type) {
  switch (y_type) {
    case spc::dtype::f16: return 2e-3;
    case spc::dtype::bf16: return 1.6e-2;
    case spc::dtype::f32: break;
  }
  return 1e-5;
}

}  // namespace sparse_gpu_test
