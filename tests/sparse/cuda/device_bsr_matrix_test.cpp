// The device layout of a block-sparse weight (inferopt/sparse/cuda/device_bsr_matrix.hpp).
// Every case exits with code 4 (ctest: skipped) when there is no device.

#include "inferopt/sparse/cuda/device_bsr_matrix.hpp"

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu_test_util.hpp"
#include "inferopt/memory/cuda/device_resource.hpp"

using namespace sparse_gpu_test;
using spc::dtype;

namespace {

template <class T>
std::vector<T> download(const T* device, std::int64_t count) {
  std::vector<T> host(static_cast<std::size_t>(count));
  if (count > 0) require_cuda(cudaMemcpy(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace

TEST_CASE("device bsr matrix holds op(W)^T with values rounded to its type and a longest-first work order",
          "[sparse][cuda]") {
  skip_without_device();
  const bool trans_w = GENERATE(false, true);
  const dtype type = GENERATE(dtype::f32, dtype::f16, dtype::bf16);
  CAPTURE(trans_w, spc::to_string(type));
  problem p{.m = 1, .k = 70, .n = 100, .block = {16, 8}, .density = 1.0, .trans_w = trans_w, .type = dtype::f32,
            .uneven = true};
  instance in = make_instance(p, 7);  // values in f32: the upload does the rounding
  inferopt::memory::cuda::device_resource mr;
  const spc::device_bsr_matrix w(in.w, trans_w, type, mr);
  const spc::device_bsr_view& v = w.view();
  const sp::bsr_matrix<float> s = trans_w ? in.w : in.w.transposed();

  CHECK(v.n == 100);
  CHECK(v.k == 70);
  CHECK(v.width == s.block().rows);
  CHECK(v.depth == s.block().cols);
  CHECK(v.width == (trans_w ? 16 : 8));
  CHECK(v.nnz_blocks == s.nnz_blocks());
  CHECK(v.type == type);
  CHECK(w.type() == type);
  CHECK(w.block_sparsity() == in.w.block_sparsity());

  const auto row_ptr = download(v.row_ptr, v.out_blocks() + 1);
  CHECK(std::vector<std::int32_t>(s.row_ptr().begin(), s.row_ptr().end()) == row_ptr);
  CHECK(std::vector<std::int32_t>(s.col_ind().begin(), s.col_ind().end()) == download(v.col_ind, v.nnz_blocks));

  const auto bytes = download(static_cast<const std::byte*>(v.values),
                              v.nnz_blocks * v.width * v.depth * static_cast<std::int64_t>(spc::size_of(type)));
  const std::vector<float> values = decode(bytes, type);
  std::vector<float> expected(s.values().begin(), s.values().end());
  for (float& e : expected) e = round_to(type, e);
  CHECK(values == expected);

  const auto order = download(v.order, v.out_blocks());
  std::vector<bool> seen(order.size(), false);
  for (std::size_t i = 0; i < order.size(); ++i) {
    REQUIRE(order[i] >= 0);
    REQUIRE(order[i] < static_cast<std::int32_t>(order.size()));
    CHECK_FALSE(seen[static_cast<std::size_t>(order[i])]);
    seen[static_cast<std::size_t>(order[i])] = true;
    if (i == 0) continue;
    const auto length = [&](std::int32_t r) { return row_ptr[r + 1] - row_ptr[r]; };
    CHECK(length(order[i - 1]) >= length(order[i]));
    if (length(order[i - 1]) == length(order[i])) CHECK(order[i - 1] < order[i]);
  }
}

TEST_CASE("device bsr matrix of an empty or fully pruned weight has no blocks", "[sparse][cuda]") {
  skip_without_device();
  inferopt::memory::cuda::device_resource mr;
  SECTION("0 x 0") {
    const spc::device_bsr_matrix w(sp::bsr_matrix<float>(), false, dtype::f16, mr);
    CHECK(w.view().n == 0);
    CHECK(w.view().k == 0);
    CHECK(w.view().nnz_blocks == 0);
  }
  SECTION("every block pruned") {
    const std::vector<float> zeros(48 * 40, 0.0F);
    const auto host = sp::bsr_matrix<float>::from_dense(zeros, 48, 40, {16, 16});
    const spc::device_bsr_matrix w(host, false, dtype::bf16, mr);
    CHECK(w.view().n == 40);
    CHECK(w.view().k == 48);
    CHECK(w.view().nnz_blocks == 0);
    CHECK(w.block_sparsity() == 1.0);
    CHECK(download(w.view().row_ptr, w.view().out_blocks() + 1) == std::vector<std::int32_t>{0, 0, 0, 0});
    CHECK(download(w.view().order, w.view().out_blocks()) == std::vector<std::int32_t>{0, 1, 2});
  }
}

TEST_CASE("device bsr matrix moves its device arrays and leaves the source empty", "[sparse][cuda]") {
  skip_without_device();
  inferopt::memory::cuda::device_resource mr;
  const problem p{.m = 1, .k = 32, .n = 32, .block = {16, 16}, .density = 1.0, .type = dtype::f16};
  const instance in = make_instance(p, 9);
  spc::device_bsr_matrix a(in.w, false, dtype::f16, mr);
  const void* values = a.view().values;
  spc::device_bsr_matrix b(std::move(a));
  CHECK(b.view().values == values);
  CHECK(b.view().nnz_blocks == 4);
  CHECK(a.view().values == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(a.view().n == 0);             // NOLINT(bugprone-use-after-move)
  spc::device_bsr_matrix c;
  c = std::move(b);
  CHECK(c.view().values == values);
  CHECK(b.view().values == nullptr);  // NOLINT(bugprone-use-after-move)
}
