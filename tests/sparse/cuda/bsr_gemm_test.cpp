// The device block-sparse GEMM (inferopt/sparse/cuda/bsr_gemm.hpp) against a float64 reference
// and the CPU kernel. Every case that needs a device exits with code 4 (ctest: skipped) when
// there is none; the argument refusals need no device and run everywhere.

#include "inferopt/sparse/cuda/bsr_gemm.hpp"

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "inferopt/memory/cuda/device.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/cuda/device_bsr_matrix.hpp"

using namespace sparse_gpu_test;
using inferopt::memory::memory_resource;
using spc::dtype;

namespace {

std::span<const std::byte> bytes_of(const std::vector<float>& v) { return std::as_bytes(std::span<const float>(v)); }

// Uploads `in`, runs the device kernel with Y poisoned (all bits set: NaN in every type) and
// returns Y as floats, m x ldy.
std::vector<float> run_device(const problem& p, const instance& in, memory_resource& mr) {
  const spc::device_bsr_matrix w(in.w, p.trans_w, p.type, mr);
  REQUIRE(w.view().n == p.n);
  REQUIRE(w.view().k == p.k);
  const device_bytes x(mr, encode(in.x, p.type));
  const device_bytes bias(mr, bytes_of(in.bias));
  device_bytes y(mr, static_cast<std::size_t>(p.m * in.ldy) * spc::size_of(p.y_type));
  y.fill(0xFF);

  spc::bsr_gemm_args args;
  args.m = p.m;
  args.x = x.data();
  args.ldx = in.ldx;
  args.w = w.view();
  args.bias = p.bias_relu ? static_cast<const float*>(bias.data()) : nullptr;
  args.act = p.bias_relu ? sp::activation::relu : sp::activation::none;
  args.y = y.data();
  args.y_type = p.y_type;
  args.ldy = in.ldy;
  const auto status = spc::can_implement(args);
  INFO(status.reason);
  REQUIRE(status.ok());
  REQUIRE(spc::workspace_bytes(args) == 0);
  const auto launched = spc::run(args, {}, {});
  INFO(launched.reason);
  REQUIRE(launched.ok());
  require_cuda(cudaDeviceSynchronize());
  require_cuda(cudaGetLastError());
  return decode(y.download(), p.y_type);
}

void check_problem(const problem& p, unsigned seed) {
  CAPTURE(p.m, p.k, p.n, p.block.rows, p.block.cols, p.density, p.trans_w, spc::to_string(p.type),
          spc::to_string(p.y_type), p.bias_relu, p.uneven, seed);
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, seed);
  CAPTURE(in.w.nnz_blocks(), in.w.block_sparsity());
  const std::vector<float> y = run_device(p, in, mr);
  require_close(p, in, compute_reference(p, in), y, frobenius_limit(p.y_type));
}

std::vector<problem> tensor_core_problems() {
  return {
      // ragged m, k, n; k not a multiple of 8 (the last 16-byte chunk of a row is partial)
      {.m = 77, .k = 100, .n = 90, .block = {16, 16}, .density = 0.5, .type = dtype::f16},
      {.m = 130, .k = 256, .n = 200, .block = {32, 32}, .density = 0.25, .trans_w = true, .type = dtype::f16,
       .bias_relu = true},
      {.m = 65, .k = 300, .n = 130, .block = {64, 64}, .density = 0.4, .type = dtype::f16, .y_type = dtype::f16,
       .bias_relu = true},
      {.m = 129, .k = 48, .n = 64, .block = {16, 16}, .density = 0.7, .trans_w = true, .type = dtype::bf16,
       .y_type = dtype::bf16},
      {.m = 256, .k = 512, .n = 96, .block = {32, 32}, .density = 0.1, .type = dtype::bf16},
      {.m = 1, .k = 64, .n = 64, .block = {64, 64}, .density = 1.0, .trans_w = true, .type = dtype::bf16,
       .bias_relu = true},
      // 0% sparsity: every block row as long as it gets, the pipeline runs all its stages
      {.m = 300, .k = 96, .n = 97, .block = {32, 32}, .density = 1.0, .type = dtype::f16},
      {.m = 200, .k = 1000, .n = 150, .block = {64, 64}, .density = 0.6, .type = dtype::bf16},
      // 100% sparsity: Y = relu(bias)
      {.m = 40, .k = 70, .n = 50, .block = {16, 16}, .density = 0.0, .type = dtype::f16, .bias_relu = true},
  };
}

std::vector<problem> cuda_core_problems() {
  return {
      {.m = 50, .k = 37, .n = 41, .block = {4, 4}, .density = 0.5, .type = dtype::f32},
      {.m = 70, .k = 45, .n = 33, .block = {7, 5}, .density = 0.6, .trans_w = true, .type = dtype::f32,
       .bias_relu = true},
      {.m = 200, .k = 256, .n = 256, .block = {16, 16}, .density = 0.25, .type = dtype::f32},
      {.m = 70, .k = 130, .n = 65, .block = {64, 64}, .density = 1.0, .trans_w = true, .type = dtype::f32},
      {.m = 64, .k = 100, .n = 64, .block = {1, 64}, .density = 0.5, .type = dtype::f32},
      {.m = 65, .k = 100, .n = 70, .block = {64, 1}, .density = 0.5, .type = dtype::f32, .bias_relu = true},
      {.m = 33, .k = 20, .n = 20, .block = {8, 8}, .density = 0.0, .type = dtype::f32, .bias_relu = true},
  };
}

}  // namespace

TEST_CASE("device bsr gemm on tensor cores matches the float64 reference for f16 and bf16", "[sparse][cuda]") {
  skip_without_device();
  const auto problems = tensor_core_problems();
  const auto index = GENERATE_COPY(range(std::size_t{0}, problems.size()));
  check_problem(problems[index], 100 + static_cast<unsigned>(index));
}

TEST_CASE("device bsr gemm on cuda cores matches the float64 reference and the cpu kernel for f32", "[sparse][cuda]") {
  skip_without_device();
  const auto problems = cuda_core_problems();
  const auto index = GENERATE_COPY(range(std::size_t{0}, problems.size()));
  const problem& p = problems[index];
  const auto seed = 200 + static_cast<unsigned>(index);
  CAPTURE(p.m, p.k, p.n, p.block.rows, p.block.cols, p.density, p.trans_w, p.bias_relu, seed);
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, seed);
  const std::vector<float> y = run_device(p, in, mr);
  const reference ref = compute_reference(p, in);
  require_close(p, in, ref, y, frobenius_limit(p.y_type));

  // The CPU kernel on the same inputs: both are within the f32 bound of the reference, so
  // within twice that of each other.
  std::vector<float> cpu(static_cast<std::size_t>(p.m * in.ldy), 0.0F);
  sp::bsr_gemm_args args;
  args.m = p.m;
  args.x = in.x.data();
  args.ldx = in.ldx;
  args.w = in.w.view();
  args.trans_w = p.trans_w;
  args.bias = p.bias_relu ? in.bias.data() : nullptr;
  args.act = p.bias_relu ? sp::activation::relu : sp::activation::none;
  args.y = cpu.data();
  args.ldy = in.ldy;
  sp::bsr_gemm(args);
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto at = static_cast<std::size_t>(i * in.ldy + j);
      const auto r = static_cast<std::size_t>(i * p.n + j);
      if (!(std::abs(double{y[at]} - cpu[at]) <= 2 * error_bound(p, ref.y[r], ref.magnitude[r]))) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("device bsr gemm writes act(bias) exactly for empty block rows", "[sparse][cuda]") {
  skip_without_device();
  auto p = GENERATE(values<problem>({
      {.m = 100, .k = 128, .n = 160, .block = {32, 32}, .density = 0.8, .type = dtype::f16, .bias_relu = true,
       .empty_outputs = {0, 2, 4}},
      {.m = 90, .k = 64, .n = 100, .block = {16, 16}, .density = 0.7, .trans_w = true, .type = dtype::bf16,
       .y_type = dtype::bf16, .bias_relu = true, .empty_outputs = {1, 6}},
      {.m = 90, .k = 64, .n = 96, .block = {8, 32}, .density = 0.7, .type = dtype::f32, .bias_relu = true,
       .empty_outputs = {1}},
  }));
  CAPTURE(spc::to_string(p.type), p.block.rows, p.block.cols);
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, 300);
  const std::vector<float> y = run_device(p, in, mr);
  require_close(p, in, compute_reference(p, in), y, frobenius_limit(p.y_type));
  const std::int64_t width = p.trans_w ? p.block.rows : p.block.cols;
  std::int64_t wrong = 0;
  for (std::int64_t e : p.empty_outputs) {
    for (std::int64_t j = e * width; j < std::min(p.n, (e + 1) * width); ++j) {
      const float expected = round_to(p.y_type, std::max(in.bias[static_cast<std::size_t>(j)], 0.0F));
      for (std::int64_t i = 0; i < p.m; ++i) wrong += y[static_cast<std::size_t>(i * in.ldy + j)] != expected ? 1 : 0;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("device bsr gemm balances block rows of very different lengths", "[sparse][cuda]") {
  skip_without_device();
  // Output block j keeps about (j + 1) / 16 of its blocks: the work order starts the long rows
  // first. Long rows also run the cp.async pipeline through many stages.
  const problem p{.m = 512, .k = 1024, .n = 512, .block = {32, 32}, .density = 1.0, .type = dtype::f16,
                  .uneven = true};
  check_problem(p, 400);
}

TEST_CASE("device bsr gemm refuses arguments it cannot run", "[sparse][cuda]") {
  // Host addresses stand in for device memory: can_implement never dereferences them, and its
  // argument checks come before any CUDA call, so this case needs no device.
  alignas(16) static std::byte memory[4096];
  spc::bsr_gemm_args a;
  a.m = 8;
  a.x = memory;
  a.ldx = 64;
  a.w.n = 32;
  a.w.k = 64;
  a.w.width = 32;
  a.w.depth = 32;
  a.w.nnz_blocks = 1;
  a.w.type = dtype::f16;
  a.w.row_ptr = reinterpret_cast<const std::int32_t*>(memory + 1024);
  a.w.col_ind = reinterpret_cast<const std::int32_t*>(memory + 1024);
  a.w.values = memory + 1024;
  a.w.order = reinterpret_cast<const std::int32_t*>(memory + 1024);
  a.y = memory + 2048;
  a.ldy = 32;

  const auto refused = [](const spc::bsr_gemm_args& args, const std::string& why) {
    const auto status = spc::can_implement(args);
    INFO("reason: " << status.reason << "; expected to contain: " << why);
    CHECK_FALSE(status.ok());
    CHECK(status.reason.find(why) != std::string::npos);
  };
  SECTION("blocks the tensor cores do not take") {
    a.w.width = a.w.depth = 8;
    a.w.n = 8;
    a.ldy = 8;
    refused(a, "16x16, 32x32 or 64x64");
  }
  SECTION("a row stride of x that is not a multiple of 8") {
    a.ldx = 68 + 2;
    refused(a, "a multiple of 8");
  }
  SECTION("x not 16-byte aligned") {
    a.x = memory + 2;
    refused(a, "16-byte aligned");
  }
  SECTION("y in a half type other than the input's") {
    a.y_type = dtype::bf16;
    refused(a, "neither f32 nor the input type");
  }
  SECTION("ldy below n") {
    a.ldy = 31;
    refused(a, "ldy 31 is less than n 32");
  }
  SECTION("a block extent past 64") {
    a.w.type = dtype::f32;
    a.w.width = 65;
    refused(a, "outside 1..64");
  }
  SECTION("y null") {
    a.y = nullptr;
    refused(a, "y is null");
  }
  SECTION("more stored blocks than the grid has") {
    a.w.nnz_blocks = 3;
    refused(a, "more stored blocks");
  }
  SECTION("y overlapping x") {
    a.w.type = dtype::f32;
    a.y = memory + 64;
    refused(a, "overlaps");
  }
  SECTION("well-formed arguments: ok with a device, refused for want of one without") {
    const auto status = spc::can_implement(a);
    if (inferopt::memory::cuda::device_count() > 0) {
      INFO(status.reason);
      CHECK(status.ok());
    } else {
      CHECK(status.reason.find("cuda device") != std::string::npos);
    }
  }
  SECTION("an empty product needs nothing") {
    a.m = 0;
    a.y = nullptr;
    CHECK(spc::can_implement(a).ok());
  }
}
