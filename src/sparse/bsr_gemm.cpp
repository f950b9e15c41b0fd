// The CPU block-sparse GEMM: argument checks, workspace, the choice of instruction set (the
// one place that chooses it) and the threads. The arithmetic is in bsr_gemm_body.hpp.
#include "inferopt/sparse/bsr_gemm.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bsr_gemm_isa.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::sparse {

namespace {

constexpr std::size_t alignment = 64;

std::size_t align_up(std::size_t n) { return (n + alignment - 1) / alignment * alignment; }

bool cpu_has_avx2() noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// What the AVX-512 build is compiled for (F, DQ, BW, VL, and FMA); libgcc's check includes the
// operating system's support for the zmm state.
bool cpu_has_avx512() noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

using pack_fn = void (*)(const detail::pack_problem&, std::int64_t, std::int64_t) noexcept;
using compute_fn = void (*)(const detail::bsr_problem&, std::int64_t, std::int64_t) noexcept;

// One instruction-set build: its panel width (which the workspace and packing depend on) and
// its two entry points.
struct build {
  std::int64_t panel_rows;
  pack_fn pack;
  compute_fn compute;
};

// The build that runs for `isa` on this CPU (an unavailable one is refused by can_implement).
build build_for(cpu_isa isa) noexcept {
  switch (resolve(isa)) {
    case cpu_isa::avx512:
      return {detail::isa_avx512::panel_rows, detail::isa_avx512::pack, detail::isa_avx512::compute};
    case cpu_isa::avx2:
      return {detail::isa_avx2::panel_rows, detail::isa_avx2::pack, detail::isa_avx2::compute};
    default:
      return {detail::isa_portable::panel_rows, detail::isa_portable::pack, detail::isa_portable::compute};
  }
}

// The geometry of the transposed problem (see bsr_gemm_isa.hpp).
struct geometry {
  std::int64_t width = 0;        // outputs per output block
  std::int64_t depth = 0;        // reduction steps per block
  std::int64_t out_blocks = 0;   // output blocks
  std::int64_t k_pad = 0;        // k rounded up to whole blocks
  std::int64_t panels = 0;       // panels of panel_rows rows of X
  std::size_t xt_bytes = 0;      // the packed panels
  std::size_t index_bytes = 0;   // one array of the block-column index (trans_w == false)
  std::size_t ptr_bytes = 0;
};

geometry geometry_of(const bsr_gemm_args& a, std::int64_t panel_rows) noexcept {
  geometry g;
  g.width = a.trans_w ? a.w.block.rows : a.w.block.cols;
  g.depth = a.trans_w ? a.w.block.cols : a.w.block.rows;
  g.out_blocks = a.trans_w ? a.w.block_rows() : a.w.block_cols();
  g.k_pad = (a.trans_w ? a.w.block_cols() : a.w.block_rows()) * g.depth;
  g.panels = (a.m + panel_rows - 1) / panel_rows;
  g.xt_bytes = align_up(static_cast<std::size_t>(g.panels * g.k_pad * panel_rows) * sizeof(float));
  if (!a.trans_w) {
    g.ptr_bytes = align_up(static_cast<std::size_t>(g.out_blocks + 1) * sizeof(std::int32_t));
    g.index_bytes = align_up(static_cast<std::size_t>(a.w.nnz_blocks) * sizeof(std::int32_t));
  }
  return g;
}

bool overlaps(const void* a, std::int64_t a_rows, std::int64_t lda, std::int64_t a_cols, const void* b,
              std::int64_t b_elems) noexcept {
  if (a == nullptr || b == nullptr || a_rows <= 0 || a_cols <= 0 || b_elems <= 0) return false;
  const auto* a0 = static_cast<const char*>(a);
  const auto* a1 = a0 + ((a_rows - 1) * lda + a_cols) * static_cast<std::int64_t>(sizeof(float));
  const auto* b0 = static_cast<const char*>(b);
  const auto* b1 = b0 + b_elems * static_cast<std::int64_t>(sizeof(float));
  return std::less<>{}(a0, b1) && std::less<>{}(b0, a1);
}

// Output blocks [split(t), split(t + 1)) go to thread t of `threads`: contiguous ranges
// with about the same number of stored blocks, plus one per output block for its stores.
std::int64_t split(const std::int32_t* ptr, std::int64_t out_blocks, int t, int threads) noexcept {
  const std::int64_t total = std::int64_t{ptr[out_blocks]} + out_blocks;
  const std::int64_t target = total * t / threads;
  std::int64_t lo = 0;
  std::int64_t hi = out_blocks;
  while (lo < hi) {  // first b with ptr[b] + b >= target
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (std::int64_t{ptr[mid]} + mid < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace

bool is_available(cpu_isa isa) noexcept {
  static const bool avx2 = detail::isa_avx2::available() && cpu_has_avx2();
  static const bool avx512 = detail::isa_avx512::available() && cpu_has_avx512();
  switch (isa) {
    case cpu_isa::avx2: return avx2;
    case cpu_isa::avx512: return avx512;
    default: return true;
  }
}

cpu_isa resolve(cpu_isa isa) noexcept {
  if (isa != cpu_isa::automatic) return isa;
  if (is_available(cpu_isa::avx512)) return cpu_isa::avx512;
  return is_available(cpu_isa::avx2) ? cpu_isa::avx2 : cpu_isa::portable;
}

const char* to_string(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::automatic: return "automatic";
    case cpu_isa::portable: return "portable";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx512: return "avx512";
  }
  return "automatic";
}

kernel_status can_implement(const bsr_gemm_args& a, const cpu_context& ctx) noexcept {
  try {
    const auto& w = a.w;
    if (w.block.rows < 1 || w.block.rows > block_shape::max_extent || w.block.cols < 1 ||
        w.block.cols > block_shape::max_extent) {
      return {"block shape " + std::to_string(w.block.rows) + "x" + std::to_string(w.block.cols) + " is outside 1..64"};
    }
    if (a.m < 0 || w.rows < 0 || w.cols < 0 || w.nnz_blocks < 0) return {"negative sizes"};
    constexpr std::int64_t max_index = std::numeric_limits<std::int32_t>::max();
    if (w.block_rows() > max_index || w.block_cols() > max_index || w.nnz_blocks > max_index) {
      return {"more than 2^31 - 1 blocks or block rows or columns"};
    }
    const std::int64_t k = a.k();
    const std::int64_t n = a.n();
    if (ctx.isa == cpu_isa::avx2 && !is_available(cpu_isa::avx2)) {
      return {detail::isa_avx2::available() ? "avx2: this cpu lacks avx2 or fma" : "avx2: not in this build"};
    }
    if (ctx.isa == cpu_isa::avx512 && !is_available(cpu_isa::avx512)) {
      return {detail::isa_avx512::available() ? "avx512: this cpu lacks avx512f, dq, bw, vl or fma"
                                              : "avx512: not in this build"};
    }
    if (a.m == 0 || n == 0) return {};
    if (a.y == nullptr) return {"y is null"};
    if (a.ldy < n) return {"ldy " + std::to_string(a.ldy) + " is less than n " + std::to_string(n)};
    if (k > 0 && a.x == nullptr) return {"x is null"};
    if (a.ldx < k) return {"ldx " + std::to_string(a.ldx) + " is less than k " + std::to_string(k)};
    if (w.block_rows() > 0 && w.row_ptr == nullptr) return {"w.row_ptr is null"};
    if (w.nnz_blocks > 0 && (w.col_ind == nullptr || w.values == nullptr)) return {"w.col_ind or w.values is null"};
    if (overlaps(a.y, a.m, a.ldy, n, a.x, k > 0 ? (a.m - 1) * a.ldx + k : 0) ||
        overlaps(a.y, a.m, a.ldy, n, a.bias, a.bias != nullptr ? n : 0) ||
        overlaps(a.y, a.m, a.ldy, n, w.values, w.nnz_blocks * w.block.size())) {
      return {"y overlaps an input"};
    }
    return {};
  } catch (...) {  // std::to_string can only fail to allocate
    return {"out of memory"};
  }
}

std::size_t workspace_bytes(const bsr_gemm_args& a, const cpu_context& ctx) noexcept {
  if (a.m <= 0 || a.n() <= 0) return 0;
  const geometry g = geometry_of(a, build_for(ctx.isa).panel_rows);
  return alignment + g.xt_bytes + g.ptr_bytes + 2 * g.index_bytes;
}

void run(const bsr_gemm_args& a, std::span<std::byte> workspace, const cpu_context& ctx) noexcept {
  const std::int64_t n = a.n();
  if (a.m <= 0 || n <= 0) return;
  const build chosen = build_for(ctx.isa);
  const geometry g = geometry_of(a, chosen.panel_rows);

  // Carve the workspace: packed X^T first, then the block-column index of W.
  std::byte* base = workspace.data();
  base += (alignment - reinterpret_cast<std::uintptr_t>(base) % alignment) % alignment;
  auto* xt = reinterpret_cast<float*>(base);
  auto* ptr = reinterpret_cast<std::int32_t*>(base + g.xt_bytes);
  auto* kblock = reinterpret_cast<std::int32_t*>(base + g.xt_bytes + g.ptr_bytes);
  auto* block = reinterpret_cast<std::int32_t*>(base + g.xt_bytes + g.ptr_bytes + g.index_bytes);

  detail::bsr_problem p;
  p.m = a.m;
  p.n = n;
  p.k_pad = g.k_pad;
  p.width = g.width;
  p.depth = g.depth;
  p.values = a.w.values;
  p.xt = xt;
  p.bias = a.bias;
  p.act = a.act;
  p.y = a.y;
  p.ldy = a.ldy;
  if (a.trans_w) {
    // W is n x k: its block rows are the output blocks, read as they are.
    p.out_stride = 1;
    p.k_stride = a.w.block.rows;
    p.ptr = a.w.row_ptr;
    p.kblock = a.w.col_ind;
  } else {
    // W is k x n: index its blocks by block column (counting sort, stable in block row).
    p.out_stride = a.w.block.rows;
    p.k_stride = 1;
    for (std::int64_t b = 0; b <= g.out_blocks; ++b) ptr[b] = 0;
    for (std::int64_t e = 0; e < a.w.nnz_blocks; ++e) ++ptr[a.w.col_ind[e] + 1];
    for (std::int64_t b = 0; b < g.out_blocks; ++b) ptr[b + 1] += ptr[b];
    for (std::int64_t i = 0; i < a.w.block_rows(); ++i) {
      for (std::int32_t e = a.w.row_ptr[i]; e < a.w.row_ptr[i + 1]; ++e) {
        const std::int32_t slot = ptr[a.w.col_ind[e]]++;
        kblock[slot] = static_cast<std::int32_t>(i);
        block[slot] = e;
      }
    }
    for (std::int64_t b = g.out_blocks; b > 0; --b) ptr[b] = ptr[b - 1];  // undo the fill's shift
    ptr[0] = 0;
    p.ptr = ptr;
    p.kblock = kblock;
    p.block = block;
  }
  const detail::pack_problem pk{a.x, a.ldx, a.m, a.k(), g.k_pad, xt};

  const pack_fn pack = chosen.pack;
  const compute_fn compute = chosen.compute;

  int threads = 1;
#ifdef _OPENMP
  threads = ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
#endif
  if (threads > g.out_blocks) threads = static_cast<int>(g.out_blocks);
  if (threads <= 1) {
    pack(pk, 0, g.panels);
    compute(p, 0, g.out_blocks);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int count = omp_get_num_threads();
    pack(pk, g.panels * t / count, g.panels * (t + 1) / count);
#pragma omp barrier
    compute(p, split(p.ptr, g.out_blocks, t, count), split(p.ptr, g.out_blocks, t + 1, count));
  }
#endif
}

void bsr_gemm(const bsr_gemm_args& args, const cpu_context& ctx) {
  const kernel_status status = can_implement(args, ctx);
  if (!status) throw error(errc::invalid_argument, "bsr_gemm: " + status.reason);
  std::vector<std::byte> workspace(workspace_bytes(args, ctx));
  run(args, workspace, ctx);
}

}  // namespace inferopt::sparse
