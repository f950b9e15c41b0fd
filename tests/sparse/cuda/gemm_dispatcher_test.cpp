// The sparse-or-dense dispatcher (inferopt/sparse/cuda/gemm_dispatcher.hpp). Cases that need a
// device exit with code 4 (ctest: skipped) when there is none; the table needs none.

#include "inferopt/sparse/cuda/gemm_dispatcher.hpp"

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"

using namespace sparse_gpu_test;
using inferopt::memory::memory_resource;
using spc::break_even_table;
using spc::dtype;
using spc::gemm_path;

namespace {

constexpr double never = 2.0;   // a threshold above any sparsity
constexpr double always = 0.0;  // a threshold every sparsity reaches

break_even_table uniform_table(double threshold) {
  return {threshold, threshold, threshold, threshold, threshold};
}

// Runs `d` on `in` (Y poisoned first), through run() with an explicit workspace or through
// operator(), and returns Y as floats, m x ldy.
std::vector<float> run_dispatcher(spc::gemm_dispatcher& d, const problem& p, const instance& in, memory_resource& mr,
                                  bool explicit_workspace) {
  const device_bytes x(mr, encode(in.x, p.type));
  const device_bytes bias(mr, std::as_bytes(std::span<const float>(in.bias)));
  device_bytes y(mr, static_cast<std::size_t>(p.m * in.ldy) * spc::size_of(p.y_type));
  y.fill(0xFF);
  spc::gemm_call_args args;
  args.m = p.m;
  args.x = p.k > 0 ? x.data() : nullptr;
  args.ldx = p.k > 0 ? in.ldx : 0;
  args.bias = p.bias_relu ? static_cast<const float*>(bias.data()) : nullptr;
  args.act = p.bias_relu ? sp::activation::relu : sp::activation::none;
  args.y = y.data();
  args.y_type = p.y_type;
  args.ldy = in.ldy;
  const auto status = d.can_implement(args);
  INFO(status.reason);
  REQUIRE(status.ok());
  if (explicit_workspace) {
    const std::size_t bytes = d.workspace_bytes(args);
    const bool needs = d.path() == gemm_path::dense && p.y_type != dtype::f32;
    CHECK((bytes >= static_cast<std::size_t>(p.m * p.n) * sizeof(float)) == needs);
    device_bytes workspace(mr, bytes);
    const auto launched = d.run(args, std::span<std::byte>(static_cast<std::byte*>(workspace.data()), bytes), {});
    INFO(launched.reason);
    REQUIRE(launched.ok());
    require_cuda(cudaDeviceSynchronize());
  } else {
    d(args);
    require_cuda(cudaDeviceSynchronize());
  }
  require_cuda(cudaGetLastError());
  return decode(y.download(), p.y_type);
}

}  // namespace

TEST_CASE("break-even table gives the threshold per element type and block shape", "[sparse][cuda]") {
  const break_even_table table;
  CHECK(table.threshold(dtype::f16, 16, 16) == table.half_block16);
  CHECK(table.threshold(dtype::bf16, 32, 32) == table.half_block32);
  CHECK(table.threshold(dtype::f16, 64, 64) == table.half_block64);
  CHECK(std::isinf(table.threshold(dtype::f16, 8, 8)));
  CHECK(std::isinf(table.threshold(dtype::bf16, 32, 16)));
  CHECK(table.threshold(dtype::f32, 16, 7) == table.f32_wide);
  CHECK(table.threshold(dtype::f32, 4, 4) == table.f32_narrow);
  // The defaults lean towards cuBLAS until the GPU measures the break-even points.
  CHECK(table.half_block16 >= table.half_block32);
  CHECK(table.half_block32 >= table.half_block64);
  CHECK(std::string(spc::to_string(gemm_path::sparse)) == "sparse");
  CHECK(std::string(spc::to_string(gemm_path::dense)) == "dense");
}

TEST_CASE("dispatcher runs the sparse kernel at or above the break-even sparsity and cuBLAS below it",
          "[sparse][cuda]") {
  skip_without_device();
  auto p = GENERATE(values<problem>({
      {.m = 96, .k = 160, .n = 130, .block = {32, 32}, .density = 0.5, .type = dtype::f16, .bias_relu = true},
      {.m = 70, .k = 128, .n = 64, .block = {16, 16}, .density = 0.4, .trans_w = true, .type = dtype::bf16,
       .y_type = dtype::bf16, .bias_relu = true},
      {.m = 33, .k = 100, .n = 90, .block = {64, 64}, .density = 0.5, .type = dtype::f16, .y_type = dtype::f16},
      {.m = 50, .k = 48, .n = 40, .block = {16, 16}, .density = 0.5, .trans_w = true, .type = dtype::f32,
       .bias_relu = true},
  }));
  const bool explicit_workspace = GENERATE(true, false);
  CAPTURE(spc::to_string(p.type), spc::to_string(p.y_type), p.block.rows, p.trans_w, explicit_workspace);
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, 500);
  const reference ref = compute_reference(p, in);
  const double sparsity = in.w.block_sparsity();
  REQUIRE(sparsity > 0.0);
  REQUIRE(sparsity < 1.0);

  SECTION("at the threshold: the sparse kernel") {
    break_even_table table = uniform_table(never);
    table.half_block16 = table.half_block32 = table.half_block64 = table.f32_wide = sparsity;
    spc::gemm_dispatcher d(in.w, p.trans_w, p.type, mr, table);
    CHECK(d.path() == gemm_path::sparse);
    REQUIRE(d.sparse_view() != nullptr);
    CHECK(d.sparse_view()->nnz_blocks == in.w.nnz_blocks());
    CHECK(d.block_sparsity() == sparsity);
    CHECK(d.k() == p.k);
    CHECK(d.n() == p.n);
    require_close(p, in, ref, run_dispatcher(d, p, in, mr, explicit_workspace), frobenius_limit(p.y_type));
  }
  SECTION("below the threshold: cuBLAS on the dense weight") {
    break_even_table table = uniform_table(always);
    table.half_block16 = table.half_block32 = table.half_block64 = table.f32_wide = std::nextafter(sparsity, 1.0);
    spc::gemm_dispatcher d(in.w, p.trans_w, p.type, mr, table);
    CHECK(d.path() == gemm_path::dense);
    CHECK(d.sparse_view() == nullptr);
    CHECK(d.type() == p.type);
    require_close(p, in, ref, run_dispatcher(d, p, in, mr, explicit_workspace), frobenius_limit(p.y_type));
  }
}

TEST_CASE("dispatcher takes cuBLAS for blocks the tensor-core kernel does not run", "[sparse][cuda]") {
  skip_without_device();
  const problem p{.m = 40, .k = 64, .n = 48, .block = {8, 8}, .density = 0.3, .type = dtype::f16,
                  .y_type = dtype::f16, .bias_relu = true};
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, 600);
  spc::gemm_dispatcher d(in.w, p.trans_w, p.type, mr, uniform_table(always));
  CHECK(d.path() == gemm_path::dense);
  require_close(p, in, compute_reference(p, in), run_dispatcher(d, p, in, mr, true), frobenius_limit(p.y_type));
}

TEST_CASE("dispatcher with nothing to reduce over writes act(bias)", "[sparse][cuda]") {
  skip_without_device();
  // k == 0: the sparse kernel when it runs the block shape (no blocks at all), else the dense
  // path's epilogue alone (cuBLAS is not called).
  auto p = GENERATE(values<problem>({
      {.m = 20, .k = 0, .n = 48, .block = {16, 16}, .density = 1.0, .type = dtype::f16, .bias_relu = true},
      {.m = 20, .k = 0, .n = 48, .block = {8, 8}, .density = 1.0, .type = dtype::f16, .y_type = dtype::f16,
       .bias_relu = true},
  }));
  CAPTURE(p.block.rows, spc::to_string(p.y_type));
  inferopt::memory::cuda::device_resource mr;
  const instance in = make_instance(p, 700);
  spc::gemm_dispatcher d(in.w, p.trans_w, p.type, mr, uniform_table(never));
  CHECK(d.path() == (p.block.rows == 16 ? gemm_path::sparse : gemm_path::dense));
  const std::vector<float> y = run_dispatcher(d, p, in, mr, true);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const float expected = round_to(p.y_type, std::max(in.bias[static_cast<std::size_t>(j)], 0.0F));
      wrong += y[static_cast<std::size_t>(i * in.ldy + j)] != expected ? 1 : 0;
    }
  }
  CHECK(wrong == 0);
}
