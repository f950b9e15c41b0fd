// The CUDA block-sparse GEMM (sparse::cuda::run, tensor cores) against cuBLAS dense and
// cuSPARSE on the same product, in the same run.
//
// Y = X W, fp16 inputs, fp32 accumulation and output, m = k = n = 4096. W is pruned by
// magnitude (l2 block norm, exact target sparsity, rows of uneven length) from a random dense
// matrix; the baselines multiply the same pruned W:
// - cuBLAS: cublasGemmEx on the dense fp16 W (CUDA_R_16F in, CUDA_R_32F out, CUBLAS_COMPUTE_32F);
// - cuSPARSE: cusparseSpMM with W^T in BSR when this cuSPARSE supports it for fp16 inputs (block
//   order column-major, then row-major), else Blocked-ELL (cusparseCreateConstBlockedEll, block
//   rows padded to the longest); the label names the format used, or why none ran.
// Arguments: square block size (16, 32, 64) and sparsity in percent (50, 75, 90).
//
// SetUp checks once that every baseline agrees with the candidate (relative Frobenius error
// under 1e-3, 1e-2 for a half-precision cuSPARSE output) and skips the benchmark when one does
// not. Each iteration then times the candidate and every baseline once with CUDA events on one
// stream, rotating which goes first; the reported time is the candidate's and
// speedup_vs_cublas / speedup_vs_cusparse are baseline time / candidate time over all
// iterations. Inputs stay in device memory and in L2 as far as it holds them (X is 32 MiB, as is
// the dense W), the same for all three.
//
// After the benchmarks it prints, per block size, the break-even sparsity these runs imply
// against cuBLAS: the lowest measured sparsity from which the kernel wins at every higher one,
// interpolated linearly in the speedup towards the measured sparsity below it and rounded up to
// a percent, as values for cuda::break_even_table's f16/bf16 entries. They hold for this shape
// (m = k = n = 4096) and fp16; the table's defaults are unmeasured guesses until a GPU run
// replaces them with these.
//
// Without a CUDA device the program prints a line and exits with 0.

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "inferopt/memory/cuda/device.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"
#include "inferopt/sparse/block_prune.hpp"
#include "inferopt/sparse/cuda/bsr_gemm.hpp"
#include "inferopt/sparse/cuda/detail/device_buffer.hpp"
#include "inferopt/sparse/cuda/device_bsr_matrix.hpp"

namespace {

namespace sp = inferopt::sparse;
namespace spc = inferopt::sparse::cuda;

constexpr std::int64_t m = 4096;
constexpr std::int64_t k = 4096;
constexpr std::int64_t n = 4096;
constexpr int iterations = 20;

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
void cublas_ok(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status));
}

std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2half_rn(v[i]);
  return out;
}

// Candidate and cuBLAS milliseconds per (block, sparsity in percent), summed over every run of
// a case (repetitions included), for the break-even report at the end.
struct timed {
  double ours_ms = 0.0;
  double cublas_ms = 0.0;
};
std::map<std::pair<int, int>, timed>& measured() {
  static std::map<std::pair<int, int>, timed> results;
  return results;
}

// Device memory from one device_resource, filled from the host or left as it comes.
inferopt::memory::memory_resource& device() {
  static inferopt::memory::cuda::device_resource resource;
  return resource;
}

class device_memory {
 public:
  explicit device_memory(std::size_t bytes) : buffer_(device(), bytes, {}) {}
  template <class T>
  explicit device_memory(const std::vector<T>& host) : device_memory(host.size() * sizeof(T)) {
    cuda_ok(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  [[nodiscard]] void* get() const { return buffer_.data(); }

 private:
  spc::detail::device_buffer buffer_;
};

// X (fp16 on the device) and the random dense W (host floats), made once for every benchmark.
struct inputs {
  std::vector<float> w_dense;  // k x n, row-major
  std::unique_ptr<device_memory> x;

  static inputs& get() {
    static inputs in = [] {
      inputs made;
      std::mt19937 rng(2024);
      std::uniform_real_distribution<float> value(-1.0F, 1.0F);
      std::vector<float> x(static_cast<std::size_t>(m * k));
      for (float& v : x) v = value(rng);
      made.x = std::make_unique<device_memory>(to_half(x));
      made.w_dense.resize(static_cast<std::size_t>(k * n));
      for (float& v : made.w_dense) v = value(rng);
      return made;
    }();
    return in;
  }
};

// ||a - b|| / ||b|| over m * n floats.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = double{a[i]} - double{b[i]};
    diff += d * d;
    norm += double{b[i]} * double{b[i]};
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

std::vector<float> download_f32(const void* device, std::size_t count) {
  std::vector<float> host(count);
  cuda_ok(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return host;
}

std::vector<float> download_f16(const void* device, std::size_t count) {
  std::vector<__half> half(count);
  cuda_ok(cudaMemcpy(half.data(), device, count * sizeof(__half), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = __half2float(half[i]);
  return host;
}

// One way of running cusparseSpMM on W^T, with everything it owns.
struct cusparse_baseline {
  std::string label;
  cusparseHandle_t handle = nullptr;
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t b = nullptr;
  cusparseDnMatDescr_t c = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  std::unique_ptr<device_memory> values;   // when the format needs its own copy of W
  std::unique_ptr<device_memory> indices;  // Blocked-ELL column indices
  std::unique_ptr<device_memory> buffer;

  cusparse_baseline() = default;
  cusparse_baseline(const cusparse_baseline&) = delete;
  cusparse_baseline& operator=(const cusparse_baseline&) = delete;
  ~cusparse_baseline() {
    if (a != nullptr) (void)cusparseDestroySpMat(a);
    if (b != nullptr) (void)cusparseDestroyDnMat(b);
    if (c != nullptr) (void)cusparseDestroyDnMat(c);
    if (handle != nullptr) (void)cusparseDestroy(handle);
  }

  cusparseStatus_t run(cudaStream_t stream) const {
    const float alpha = 1.0F;
    const float beta = 0.0F;
    (void)cusparseSetStream(handle, stream);
    return cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, b,
                        &beta, c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buffer != nullptr ? buffer->get() : nullptr);
  }
};

// The sparse operand is S = W^T (n x k, our device layout), B = X^T (k x m, column-major: X
// row-major), C = Y^T (n x m, column-major: Y row-major). `make_a` creates the descriptor of S
// in one format. Returns why it did not work, or nothing when `base` is ready.
using make_descriptor = cusparseStatus_t (*)(cusparse_baseline&, const sp::bsr_matrix<float>&, const spc::device_bsr_view&);

std::optional<std::string> try_cusparse(cusparse_baseline& base, make_descriptor make_a, const sp::bsr_matrix<float>& s,
                                        const spc::device_bsr_view& view, const void* x, void* y, cudaDataType c_type,
                                        const std::vector<float>& expected) {
  const auto fail = [&](const char* what, cusparseStatus_t st) {
    return std::optional<std::string>(base.label + ": " + what + ": " + cusparseGetErrorString(st));
  };
  cusparseStatus_t st = cusparseCreate(&base.handle);
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("cusparseCreate", st);
  st = make_a(base, s, view);
  if (c_type == CUDA_R_16F) base.label += ", fp16 output";
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("descriptor", st);
  st = cusparseCreateConstDnMat(&base.b, k, m, k, x, CUDA_R_16F, CUSPARSE_ORDER_COL);
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("cusparseCreateConstDnMat", st);
  base.c_type = c_type;
  st = cusparseCreateDnMat(&base.c, n, m, n, y, c_type, CUSPARSE_ORDER_COL);
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("cusparseCreateDnMat", st);
  const float alpha = 1.0F;
  const float beta = 0.0F;
  std::size_t bytes = 0;
  st = cusparseSpMM_bufferSize(base.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                               base.a, base.b, &beta, base.c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes);
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("cusparseSpMM_bufferSize", st);
  if (bytes > 0) base.buffer = std::make_unique<device_memory>(bytes);
  cuda_ok(cudaMemset(y, 0xFF, static_cast<std::size_t>(m * n) * sizeof(float)), "cudaMemset");
  st = base.run(nullptr);
  if (st != CUSPARSE_STATUS_SUCCESS) return fail("cusparseSpMM", st);
  const cudaError_t synced = cudaDeviceSynchronize();
  if (synced != cudaSuccess) throw std::runtime_error(base.label + ": " + cudaGetErrorString(synced));
  const auto got = c_type == CUDA_R_32F ? download_f32(y, static_cast<std::size_t>(m * n))
                                        : download_f16(y, static_cast<std::size_t>(m * n));
  const double error = relative_error(got, expected);
  const double limit = c_type == CUDA_R_32F ? 1e-3 : 1e-2;
  if (!(error < limit)) {
    return std::optional<std::string>(base.label + ": disagrees with the candidate (relative error " +
                                      std::to_string(error) + ")");
  }
  return std::nullopt;
}

cusparseStatus_t bsr_column_major(cusparse_baseline& base, const sp::bsr_matrix<float>&, const spc::device_bsr_view& v) {
  base.label = "cusparse bsr (column-major blocks)";
  return cusparseCreateConstBsr(&base.a, v.out_blocks(), v.k_blocks(), v.nnz_blocks, v.width, v.depth, v.row_ptr,
                                v.col_ind, v.values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                CUDA_R_16F, CUSPARSE_ORDER_COL);
}

cusparseStatus_t bsr_row_major(cusparse_baseline& base, const sp::bsr_matrix<float>& s, const spc::device_bsr_view& v) {
  base.label = "cusparse bsr (row-major blocks)";
  const std::int64_t bs = v.width;
  std::vector<__half> values(s.values().size());
  for (std::int64_t b = 0; b < s.nnz_blocks(); ++b) {
    const auto block = s.block_values(b);  // column-major
    for (std::int64_t i = 0; i < bs; ++i) {
      for (std::int64_t j = 0; j < bs; ++j) {
        values[static_cast<std::size_t>(b * bs * bs + i * bs + j)] = __float2half_rn(block[static_cast<std::size_t>(j * bs + i)]);
      }
    }
  }
  base.values = std::make_unique<device_memory>(values);
  return cusparseCreateConstBsr(&base.a, v.out_blocks(), v.k_blocks(), v.nnz_blocks, v.width, v.depth, v.row_ptr,
                                v.col_ind, base.values->get(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_BASE_ZERO, CUDA_R_16F, CUSPARSE_ORDER_ROW);
}

cusparseStatus_t blocked_ell(cusparse_baseline& base, const sp::bsr_matrix<float>& s, const spc::device_bsr_view& v) {
  const std::int64_t bs = v.width;
  const std::int64_t block_rows = s.block_rows();
  std::int64_t width = 0;  // stored blocks of the longest block row
  for (std::int64_t r = 0; r < block_rows; ++r) width = std::max<std::int64_t>(width, s.row_ptr()[r + 1] - s.row_ptr()[r]);
  base.label = "cusparse blocked-ell (" + std::to_string(width) + " blocks per row)";
  const std::int64_t ell_cols = width * bs;
  std::vector<std::int32_t> columns(static_cast<std::size_t>(block_rows * width), -1);
  std::vector<__half> values(static_cast<std::size_t>(n * ell_cols), __float2half_rn(0.0F));
  for (std::int64_t r = 0; r < block_rows; ++r) {
    for (std::int32_t e = s.row_ptr()[r]; e < s.row_ptr()[r + 1]; ++e) {
      const std::int64_t slot = e - s.row_ptr()[r];
      columns[static_cast<std::size_t>(r * width + slot)] = s.col_ind()[e];
      const auto block = s.block_values(e);  // column-major
      for (std::int64_t i = 0; i < bs; ++i) {
        for (std::int64_t j = 0; j < bs; ++j) {
          values[static_cast<std::size_t>((r * bs + i) * ell_cols + slot * bs + j)] =
              __float2half_rn(block[static_cast<std::size_t>(j * bs + i)]);
        }
      }
    }
  }
  base.indices = std::make_unique<device_memory>(columns);
  base.values = std::make_unique<device_memory>(values);
  return cusparseCreateConstBlockedEll(&base.a, n, k, bs, ell_cols, base.indices->get(), base.values->get(),
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_16F);
}

class bsr_gpu : public benchmark::Fixture {
 public:
  void SetUp(benchmark::State& state) override {
    try {
      set_up(static_cast<int>(state.range(0)), static_cast<double>(state.range(1)) / 100.0, state);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
    }
  }
  void TearDown(benchmark::State&) override { release(); }

  void time(benchmark::State& state);

 private:
  void set_up(int block, double sparsity, benchmark::State& state);
  void release() {
    cusparse_.reset();
    if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
    cublas_ = nullptr;
    for (cudaEvent_t& e : events_) {
      if (e != nullptr) (void)cudaEventDestroy(e);
      e = nullptr;
    }
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
    weight_.reset();
    dense_.reset();
    y_ours_.reset();
    y_cublas_.reset();
    y_cusparse_.reset();
  }

  void run_ours() {
    const auto st = spc::run(args_, {}, {stream_});
    if (!st) throw std::runtime_error("candidate: " + st.reason);
  }
  void run_cublas() {
    const float alpha = 1.0F;
    const float beta = 0.0F;
    cublas_ok(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                           static_cast<int>(k), &alpha, dense_->get(), CUDA_R_16F, static_cast<int>(n),
                           inputs::get().x->get(), CUDA_R_16F, static_cast<int>(k), &beta, y_cublas_->get(),
                           CUDA_R_32F, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  }
  void run_cusparse() {
    if (cusparse_->run(stream_) != CUSPARSE_STATUS_SUCCESS) throw std::runtime_error("cusparseSpMM failed");
  }

  std::optional<spc::device_bsr_matrix> weight_;
  std::unique_ptr<device_memory> dense_;       // pruned W, k x n fp16 row-major, for cuBLAS
  std::unique_ptr<device_memory> y_ours_;      // m x n fp32
  std::unique_ptr<device_memory> y_cublas_;    // m x n fp32
  std::unique_ptr<device_memory> y_cusparse_;  // m x n fp32 (or fp16)
  std::unique_ptr<cusparse_baseline> cusparse_;  // null when no cuSPARSE format ran
  cublasHandle_t cublas_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[6] = {};
  spc::bsr_gemm_args args_;
  double density_ = 1.0;
  double stored_bytes_ = 0.0;
};

void bsr_gpu::set_up(int block, double sparsity, benchmark::State& state) {
  release();
  const inputs& in = inputs::get();
  sp::prune_options options;
  options.block = {block, block};
  options.sparsity = sparsity;
  const auto w = sp::prune_blocks<float>(in.w_dense, k, n, options);  // W: k x n
  density_ = 1.0 - w.block_sparsity();
  weight_.emplace(w, false, spc::dtype::f16, device());
  dense_ = std::make_unique<device_memory>(to_half(w.to_dense()));
  const std::size_t y_bytes = static_cast<std::size_t>(m * n) * sizeof(float);
  y_ours_ = std::make_unique<device_memory>(y_bytes);
  y_cublas_ = std::make_unique<device_memory>(y_bytes);
  y_cusparse_ = std::make_unique<device_memory>(y_bytes);
  cuda_ok(cudaStreamCreate(&stream_), "cudaStreamCreate");
  for (cudaEvent_t& e : events_) cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
  cublas_ok(cublasCreate(&cublas_), "cublasCreate");
  cublas_ok(cublasSetStream(cublas_, stream_), "cublasSetStream");
  stored_bytes_ = static_cast<double>(m * k * 2) + static_cast<double>(w.nnz_blocks()) * block * block * 2 +
                  static_cast<double>(m * n * 4);

  args_ = {};
  args_.m = m;
  args_.x = in.x->get();
  args_.ldx = k;
  args_.w = weight_->view();
  args_.y = y_ours_->get();
  args_.ldy = n;
  const auto status = spc::can_implement(args_);
  if (!status) throw std::runtime_error("candidate refuses: " + status.reason);

  // The candidate (Y poisoned first) against cuBLAS, once.
  cuda_ok(cudaMemset(y_ours_->get(), 0xFF, y_bytes), "cudaMemset");
  run_ours();
  run_cublas();
  cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  const auto ours = download_f32(y_ours_->get(), static_cast<std::size_t>(m * n));
  const auto dense = download_f32(y_cublas_->get(), static_cast<std::size_t>(m * n));
  const double error = relative_error(ours, dense);
  state.counters["error_vs_cublas"] = error;
  if (!(error < 1e-3)) throw std::runtime_error("candidate disagrees with cuBLAS: relative error " + std::to_string(error));

  // cuSPARSE: the first format that runs and agrees.
  const sp::bsr_matrix<float> s = w.transposed();
  std::string why;
  const struct {
    make_descriptor make;
    cudaDataType c_type;
  } attempts[] = {{bsr_column_major, CUDA_R_32F}, {bsr_row_major, CUDA_R_32F}, {blocked_ell, CUDA_R_32F},
                  {blocked_ell, CUDA_R_16F}};
  for (const auto& attempt : attempts) {
    auto base = std::make_unique<cusparse_baseline>();
    const auto failed =
        try_cusparse(*base, attempt.make, s, weight_->view(), in.x->get(), y_cusparse_->get(), attempt.c_type, ours);
    if (!failed) {
      cusparse_ = std::move(base);
      break;
    }
    why += (why.empty() ? "" : "; ") + *failed;
  }
  state.SetLabel(cusparse_ != nullptr ? cusparse_->label : "cusparse unavailable: " + why);
}

void bsr_gpu::time(benchmark::State& state) {
  if (state.error_occurred()) return;  // SetUp skipped it
  double ours_ms = 0.0;
  double cublas_ms = 0.0;
  double cusparse_ms = 0.0;
  int turn = 0;
  for (auto _ : state) {
    // Rotate which implementation goes first, so that clock and heat drift spread evenly.
    const int count = cusparse_ != nullptr ? 3 : 2;
    float elapsed[3] = {0.0F, 0.0F, 0.0F};
    for (int i = 0; i < count; ++i) {
      const int which = (turn + i) % count;
      cuda_ok(cudaEventRecord(events_[2 * which], stream_), "cudaEventRecord");
      if (which == 0) run_ours();
      else if (which == 1) run_cublas();
      else run_cusparse();
      cuda_ok(cudaEventRecord(events_[2 * which + 1], stream_), "cudaEventRecord");
    }
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    for (int which = 0; which < count; ++which) {
      cuda_ok(cudaEventElapsedTime(&elapsed[which], events_[2 * which], events_[2 * which + 1]), "cudaEventElapsedTime");
    }
    ++turn;
    ours_ms += elapsed[0];
    cublas_ms += elapsed[1];
    cusparse_ms += elapsed[2];
    state.SetIterationTime(elapsed[0] / 1e3);
  }
  timed& sums = measured()[{static_cast<int>(state.range(0)), static_cast<int>(state.range(1))}];
  sums.ours_ms += ours_ms;
  sums.cublas_ms += cublas_ms;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  const auto iters = static_cast<double>(state.iterations());
  state.counters["density"] = density_;
  state.counters["speedup_vs_cublas"] = cublas_ms / ours_ms;
  if (cusparse_ != nullptr) state.counters["speedup_vs_cusparse"] = cusparse_ms / ours_ms;
  // Useful work only (the stored blocks): the rate the kernel reaches on what it must compute.
  state.counters["useful_TFLOPS"] = flops * density_ * iters / (ours_ms / 1e3) / 1e12;
  state.counters["cublas_TFLOPS"] = flops * iters / (cublas_ms / 1e3) / 1e12;
  state.SetItemsProcessed(static_cast<std::int64_t>(flops * density_) * state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(stored_bytes_) * state.iterations());
}

BENCHMARK_DEFINE_F(bsr_gpu, BM_bsr_gemm_cuda_f16)(benchmark::State& state) {
  try {
    time(state);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK_REGISTER_F(bsr_gpu, BM_bsr_gemm_cuda_f16)
    ->ArgNames({"block", "sparsity"})
    ->ArgsProduct({{16, 32, 64}, {50, 75, 90}})
    ->Iterations(iterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Per block size, where the kernel starts to beat cuBLAS in this run (see the top of the file).
// Prints nothing for a block size without measurements (filtered out, or skipped with an error).
void print_break_even() {
  std::map<int, std::vector<std::pair<double, double>>> by_block;  // block -> (sparsity, speedup)
  for (const auto& [key, t] : measured()) {
    if (t.ours_ms > 0.0) by_block[key.first].emplace_back(key.second / 100.0, t.cublas_ms / t.ours_ms);
  }
  if (by_block.empty()) return;
  std::cout << "\nbreak-even vs cublasGemmEx (fp16 in, fp32 out, m = k = n = 4096), measured in this run:\n";
  std::cout << std::fixed;
  std::string table;
  for (const auto& [block, points] : by_block) {  // points sorted by sparsity (map order)
    std::cout << "  " << block << "x" << block << ":";
    for (const auto& [sparsity, speedup] : points) {
      std::cout << " " << std::setprecision(0) << sparsity * 100.0 << "% " << std::setprecision(2) << speedup << "x";
    }
    // The first point from which every higher measured sparsity wins.
    std::size_t first_win = points.size();
    while (first_win > 0 && points[first_win - 1].second >= 1.0) --first_win;
    std::ostringstream value;
    value << std::setprecision(2) << std::fixed;
    if (first_win == points.size()) {
      std::cout << " -> slower than cuBLAS up to " << std::setprecision(0) << points.back().first * 100.0
                << "%: break-even above that (not measured); keep the threshold above "
                << std::setprecision(2) << points.back().first << "\n";
      continue;
    }
    double at = points[first_win].first;
    if (first_win == 0) {
      std::cout << " -> faster from the lowest sparsity measured: break-even at or below " << std::setprecision(0)
                << at * 100.0 << "% (lower not measured)";
    } else {
      const auto [s0, a] = points[first_win - 1];
      const auto [s1, b] = points[first_win];
      at = s0 + (1.0 - a) / (b - a) * (s1 - s0);
      std::cout << " -> break-even between " << std::setprecision(0) << s0 * 100.0 << "% and " << s1 * 100.0
                << "%, about " << std::setprecision(1) << at * 100.0 << "% (linear in the speedup)";
    }
    std::cout << "\n";
    value << std::ceil(at * 100.0) / 100.0;  // rounded up: at the threshold the kernel does not lose
    table += (table.empty() ? "" : ", ") + std::string(".half_block") + std::to_string(block) + " = " + value.str();
  }
  if (!table.empty()) std::cout << "  for cuda::break_even_table: {" << table << "}\n";
  std::cout.flush();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (inferopt::memory::cuda::device_count() == 0) {
    std::cout << "sparse_gpu_bench: no CUDA device: skipped\n";
    return 0;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess) benchmark::AddCustomContext("gpu", properties.name);
  benchmark::RunSpecifiedBenchmarks();
  print_break_even();
  benchmark::Shutdown();
  return 0;
}
