#include "inferopt/sparse/bsr_gemm.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/block_prune.hpp"

using namespace inferopt;
using sparse::activation;
using sparse::block_shape;
using sparse::bsr_matrix;
using sparse::cpu_isa;

namespace {

struct gemm_case {
  std::int64_t m = 0, k = 0, n = 0;
  block_shape block;
  double sparsity = 0.0;
  bool trans_w = false;
  bool bias = false;
  activation act = activation::none;
  cpu_isa isa = cpu_isa::portable;
  int threads = 1;
  bool empty_lines = false;  // zero one block row and one block column of W
};

std::vector<float> random_values(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  std::vector<float> out(count);
  for (float& v : out) v = value(rng);
  return out;
}

// W as stored: k x n, or n x k when trans_w.
bsr_matrix<float> make_weight(const gemm_case& c, std::mt19937& rng) {
  const std::int64_t rows = c.trans_w ? c.n : c.k;
  const std::int64_t cols = c.trans_w ? c.k : c.n;
  auto dense = random_values(static_cast<std::size_t>(rows * cols), rng);
  if (c.empty_lines) {
    // Block row 1 and block column 0 (when they exist) hold only zeros: from_dense drops them.
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        if (i / c.block.rows == 1 || j / c.block.cols == 0) dense[static_cast<std::size_t>(i * cols + j)] = 0.0F;
      }
    }
    return bsr_matrix<float>::from_dense(dense, rows, cols, c.block);
  }
  sparse::prune_options options;
  options.block = c.block;
  options.sparsity = c.sparsity;
  return sparse::prune_blocks<float>(dense, rows, cols, options);
}

// Runs the kernel on `c` and compares every output with a float64 reference, within the
// kernel's documented bound (k + 1) * 2^-24 * (sum |x w| + |bias|).
void check_against_reference(const gemm_case& c, unsigned seed = 1) {
  CAPTURE(c.m, c.k, c.n, c.block.rows, c.block.cols, c.sparsity, c.trans_w, c.bias, static_cast<int>(c.act),
          sparse::to_string(c.isa), c.threads, c.empty_lines);
  std::mt19937 rng(seed);
  const auto w = make_weight(c, rng);
  const auto wd = w.to_dense();
  const std::int64_t ldx = c.k + 3;  // row strides wider than the rows
  const std::int64_t ldy = c.n + 5;
  const auto x = random_values(static_cast<std::size_t>(c.m * ldx), rng);
  const auto bias = random_values(static_cast<std::size_t>(c.n), rng);
  std::vector<float> y(static_cast<std::size_t>(c.m * ldy), std::numeric_limits<float>::quiet_NaN());

  sparse::bsr_gemm_args args;
  args.m = c.m;
  args.x = x.data();
  args.ldx = ldx;
  args.w = w.view();
  args.trans_w = c.trans_w;
  args.bias = c.bias ? bias.data() : nullptr;
  args.act = c.act;
  args.y = y.data();
  args.ldy = ldy;
  const sparse::cpu_context ctx{c.threads, c.isa};
  REQUIRE(args.k() == c.k);
  REQUIRE(args.n() == c.n);
  const auto status = sparse::can_implement(args, ctx);
  INFO(status.reason);
  REQUIRE(status.ok());
  sparse::bsr_gemm(args, ctx);

  constexpr double unit = 1.0 / (1 << 24);
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double exact = c.bias ? bias[static_cast<std::size_t>(j)] : 0.0;
      double magnitude = std::abs(exact);
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double wv = c.trans_w ? wd[static_cast<std::size_t>(j * c.k + p)] : wd[static_cast<std::size_t>(p * c.n + j)];
        const double xv = x[static_cast<std::size_t>(i * ldx + p)];
        exact += xv * wv;
        magnitude += std::abs(xv * wv);
      }
      if (c.act == activation::relu) exact = exact < 0 ? 0 : exact;
      const double got = y[static_cast<std::size_t>(i * ldy + j)];
      CAPTURE(i, j, got, exact);
      REQUIRE(std::abs(got - exact) <= static_cast<double>(c.k + 1) * unit * magnitude + 1e-30);
    }
    for (std::int64_t j = c.n; j < ldy; ++j) REQUIRE(std::isnan(y[static_cast<std::size_t>(i * ldy + j)]));
  }
}

// The instruction sets to test on this machine, each pinned through cpu_context::isa:
// portable always, avx2 and avx512 when they run here.
std::vector<cpu_isa> testable_isas() {
  std::vector<cpu_isa> out{cpu_isa::portable};
  for (const cpu_isa isa : {cpu_isa::avx2, cpu_isa::avx512}) {
    if (sparse::is_available(isa)) out.push_back(isa);
    else WARN(sparse::to_string(isa) << " is not available on this machine: its build is not tested");
  }
  return out;
}

}  // namespace

TEST_CASE("bsr gemm matches a dense reference for every specialized block size", "[sparse][bsr_gemm]") {
  const std::int32_t size = GENERATE(4, 8, 16, 32);
  const bool trans_w = GENERATE(false, true);
  const double sparsity = GENERATE(0.0, 0.5, 0.9);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = 150;         // full panels and a partial one: 6 x 24 + 6 (portable, avx2), 2 x 64 + 22 (avx512)
    c.k = 3 * size + 1;  // ragged: the last k block sticks out
    c.n = 2 * size + 3;  // ragged: the last output block sticks out
    c.block = {size, size};
    c.sparsity = sparsity;
    c.trans_w = trans_w;
    c.isa = isa;
    check_against_reference(c);
  }
}

TEST_CASE("bsr gemm matches a dense reference for other block shapes (generic kernel)", "[sparse][bsr_gemm]") {
  auto [br, bc] = GENERATE(table<std::int32_t, std::int32_t>({{1, 1}, {3, 5}, {7, 12}, {5, 16}, {16, 4}, {64, 64}, {2, 64}}));
  const bool trans_w = GENERATE(false, true);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = 31;
    c.k = 70;
    c.n = 45;
    c.block = {br, bc};
    c.sparsity = 0.5;
    c.trans_w = trans_w;
    c.isa = isa;
    check_against_reference(c);
  }
}

TEST_CASE("bsr gemm handles ragged and degenerate shapes", "[sparse][bsr_gemm]") {
  auto [m, k, n] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t>({
      {1, 17, 9},      // one row of X
      {24, 16, 16},    // exactly one panel (portable, avx2) and one block
      {25, 33, 17},    // one row past a panel (portable, avx2)
      {64, 16, 16},    // exactly one panel (avx512)
      {65, 33, 17},    // one row past a panel (avx512)
      {7, 5, 3},       // smaller than one block everywhere
      {5, 0, 12},      // k = 0: Y is the bias
      {200, 700, 40},  // several panel chunks (X^T larger than the L2 chunk)
  }));
  const bool trans_w = GENERATE(false, true);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = m;
    c.k = k;
    c.n = n;
    c.block = {16, 16};
    c.sparsity = 0.5;
    c.trans_w = trans_w;
    c.bias = true;
    c.isa = isa;
    check_against_reference(c);
  }
}

TEST_CASE("bsr gemm writes only the bias for 100% sparsity and for empty block rows and columns",
          "[sparse][bsr_gemm]") {
  const std::int32_t size = GENERATE(4, 16, 5);
  const bool trans_w = GENERATE(false, true);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = 30;
    c.k = 4 * size;
    c.n = 3 * size + 1;
    c.block = {size, size};
    c.trans_w = trans_w;
    c.bias = true;
    c.isa = isa;
    c.sparsity = 1.0;  // no block at all
    check_against_reference(c);
    c.sparsity = 0.0;
    c.empty_lines = true;  // an empty block row and an empty block column
    check_against_reference(c);
  }
}

TEST_CASE("bsr gemm fuses the bias and relu", "[sparse][bsr_gemm]") {
  const std::int32_t size = GENERATE(4, 8, 16, 32, 6);
  const bool trans_w = GENERATE(false, true);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = 77;  // full panels and a partial one for every build
    c.k = 2 * size + 7;
    c.n = 2 * size + 2;
    c.block = {size, size};
    c.sparsity = 0.5;
    c.trans_w = trans_w;
    c.bias = true;
    c.act = activation::relu;
    c.isa = isa;
    check_against_reference(c);
    c.bias = false;
    check_against_reference(c, 2);
  }
}

TEST_CASE("bsr gemm gives the same result on several threads", "[sparse][bsr_gemm]") {
  const int threads = GENERATE(2, 3, 8);
  const bool trans_w = GENERATE(false, true);
  for (const cpu_isa isa : testable_isas()) {
    gemm_case c;
    c.m = 70;
    c.k = 96;
    c.n = 150;  // more output blocks than threads, and uneven ones
    c.block = {8, 8};
    c.sparsity = 0.75;
    c.trans_w = trans_w;
    c.bias = true;
    c.act = activation::relu;
    c.isa = isa;
    c.threads = threads;
    check_against_reference(c);
  }
}

TEST_CASE("bsr gemm keeps NaN through relu", "[sparse][bsr_gemm]") {
  const std::vector<float> dense{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // 4 x 4, one 4 x 4 block
  const auto w = bsr_matrix<float>::from_dense(dense, 4, 4, {4, 4});
  for (const cpu_isa isa : testable_isas()) {
    CAPTURE(sparse::to_string(isa));
    std::vector<float> x(4 * 30, -1.0F);
    x[0] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(4 * 30, 7.0F);
    sparse::bsr_gemm_args args;
    args.m = 30;
    args.x = x.data();
    args.ldx = 4;
    args.w = w.view();
    args.act = activation::relu;
    args.y = y.data();
    args.ldy = 4;
    sparse::bsr_gemm(args, {1, isa});
    CHECK(std::isnan(y[0]));
    CHECK(std::isnan(y[1]));  // NaN * 0 is NaN, as in the dense product
    CHECK(y[4] == 0.0F);      // row 1: -1 * 1, clamped
    CHECK(y[5] == 0.0F);
  }
}

TEST_CASE("bsr gemm resolves automatic to the widest build this cpu runs", "[sparse][bsr_gemm]") {
  const cpu_isa widest = sparse::is_available(cpu_isa::avx512) ? cpu_isa::avx512
                         : sparse::is_available(cpu_isa::avx2) ? cpu_isa::avx2
                                                                 : cpu_isa::portable;
  CHECK(sparse::resolve(cpu_isa::automatic) == widest);
  for (const cpu_isa isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512}) CHECK(sparse::resolve(isa) == isa);
  CHECK(std::string(sparse::to_string(cpu_isa::automatic)) == "automatic");
  CHECK(std::string(sparse::to_string(cpu_isa::portable)) == "portable");
  CHECK(std::string(sparse::to_string(cpu_isa::avx2)) == "avx2");
  CHECK(std::string(sparse::to_string(cpu_isa::avx512)) == "avx512");
  CHECK(sparse::is_available(cpu_isa::automatic));
  CHECK(sparse::is_available(cpu_isa::portable));
}

TEST_CASE("bsr gemm refuses what it cannot compute, with a reason", "[sparse][bsr_gemm]") {
  const auto w = bsr_matrix<float>::from_dense(std::vector<float>(64, 1.0F), 8, 8, {4, 4});
  std::vector<float> x(8 * 8, 1.0F);
  std::vector<float> y(8 * 8, 0.0F);
  sparse::bsr_gemm_args args;
  args.m = 8;
  args.x = x.data();
  args.ldx = 8;
  args.w = w.view();
  args.y = y.data();
  args.ldy = 8;
  REQUIRE(sparse::can_implement(args, {}).ok());

  auto refused = [&](sparse::bsr_gemm_args a, const std::string& reason) {
    const auto s = sparse::can_implement(a, {});
    CAPTURE(s.reason);
    CHECK_FALSE(s.ok());
    CHECK(s.reason.find(reason) != std::string::npos);
    REQUIRE_THROWS_AS(sparse::bsr_gemm(a, {}), inferopt::error);
  };
  SECTION("a short leading dimension") {
    auto a = args;
    a.ldx = 7;
    refused(a, "ldx 7 is less than k 8");
    a = args;
    a.ldy = 4;
    refused(a, "ldy 4 is less than n 8");
  }
  SECTION("null operands") {
    auto a = args;
    a.x = nullptr;
    refused(a, "x is null");
    a = args;
    a.y = nullptr;
    refused(a, "y is null");
  }
  SECTION("a block shape outside 1..64") {
    auto a = args;
    a.w.block = {4, 65};
    refused(a, "block shape 4x65 is outside 1..64");
  }
  SECTION("negative sizes") {
    auto a = args;
    a.m = -1;
    refused(a, "negative sizes");
  }
  SECTION("an output that overlaps an input") {
    auto a = args;
    a.y = x.data();
    refused(a, "y overlaps an input");
  }
  SECTION("an instruction set this machine lacks") {
    for (const cpu_isa isa : {cpu_isa::avx2, cpu_isa::avx512}) {
      CAPTURE(sparse::to_string(isa));
      const auto s = sparse::can_implement(args, {1, isa});
      CHECK(s.ok() == sparse::is_available(isa));
      if (!s.ok()) CHECK(s.reason.find(sparse::to_string(isa)) == 0);
    }
  }
  SECTION("an empty product needs no operands") {
    auto a = args;
    a.m = 0;
    a.x = nullptr;
    a.y = nullptr;
    CHECK(sparse::can_implement(a, {}).ok());
    CHECK(sparse::workspace_bytes(a, {}) == 0);
    REQUIRE_NOTHROW(sparse::bsr_gemm(a, {}));
  }
}
