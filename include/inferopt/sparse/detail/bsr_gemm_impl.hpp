#pragma once
// The CPU block-sparse GEMM: argument checks, workspace and the threads, around the build its
// config names (bsr_gemm_config.hpp, the one place that chooses the instruction set). The
// arithmetic is in bsr_gemm_body.hpp. Included by bsr_gemm.hpp; include that instead.
//
// Threads: `run` forks OpenMP threads only where _OPENMP is defined. Files of one program that
// disagree on OpenMP break the one-definition rule for `run`: the linker keeps one of its two
// definitions, so some calls may run serially (never with a different result). Hence the rule in
// bsr_gemm.hpp to compile them all the same way.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "inferopt/core/error.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/detail/bsr_gemm_config.hpp"
#include "inferopt/sparse/detail/bsr_gemm_isa.hpp"

namespace inferopt::sparse::detail {

inline constexpr std::size_t workspace_alignment = 64;

inline std::size_t align_up_64(std::size_t n) {
  return (n + workspace_alignment - 1) / workspace_alignment * workspace_alignment;
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

inline geometry geometry_of(const bsr_gemm_args& a, std::int64_t panel_rows) noexcept {
  geometry g;
  g.width = a.trans_w ? a.w.block.rows : a.w.block.cols;
  g.depth = a.trans_w ? a.w.block.cols : a.w.block.rows;
  g.out_blocks = a.trans_w ? a.w.block_rows() : a.w.block_cols();
  g.k_pad = (a.trans_w ? a.w.block_cols() : a.w.block_rows()) * g.depth;
  g.panels = (a.m + panel_rows - 1) / panel_rows;
  g.xt_bytes = align_up_64(static_cast<std::size_t>(g.panels * g.k_pad * panel_rows) * sizeof(float));
  if (!a.trans_w) {
    g.ptr_bytes = align_up_64(static_cast<std::size_t>(g.out_blocks + 1) * sizeof(std::int32_t));
    g.index_bytes = align_up_64(static_cast<std::size_t>(a.w.nnz_blocks) * sizeof(std::int32_t));
  }
  return g;
}

inline bool overlaps(const void* a, std::int64_t a_rows, std::int64_t lda, std::int64_t a_cols, const void* b,
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
inline std::int64_t split(const std::int32_t* ptr, std::int64_t out_blocks, int t, int threads) noexcept {
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


// The workspace of `run`, carved: packed X^T first, then the block-column index of W.
struct workspace_layout {
  float* xt = nullptr;
  std::int32_t* ptr = nullptr;
  std::int32_t* kblock = nullptr;
  std::int32_t* block = nullptr;
};

inline workspace_layout carve(std::span<std::byte> workspace, const geometry& g) noexcept {
  std::byte* base = workspace.data();
  base += (workspace_alignment - reinterpret_cast<std::uintptr_t>(base) % workspace_alignment) % workspace_alignment;
  return {reinterpret_cast<float*>(base), reinterpret_cast<std::int32_t*>(base + g.xt_bytes),
          reinterpret_cast<std::int32_t*>(base + g.xt_bytes + g.ptr_bytes),
          reinterpret_cast<std::int32_t*>(base + g.xt_bytes + g.ptr_bytes + g.index_bytes)};
}

// W is k x n (trans_w == false): indexes its blocks by block column into the workspace
// (counting sort, stable in block row) and points `p` at the index.
inline void index_block_columns(const bsr_view<const float>& w, const geometry& g, const workspace_layout& ws,
                                bsr_problem& p) noexcept {
  std::int32_t* ptr = ws.ptr;
  for (std::int64_t b = 0; b <= g.out_blocks; ++b) ptr[b] = 0;
  for (std::int64_t e = 0; e < w.nnz_blocks; ++e) ++ptr[w.col_ind[e] + 1];
  for (std::int64_t b = 0; b < g.out_blocks; ++b) ptr[b + 1] += ptr[b];
  for (std::int64_t i = 0; i < w.block_rows(); ++i) {
    for (std::int32_t e = w.row_ptr[i]; e < w.row_ptr[i + 1]; ++e) {
      const std::int32_t slot = ptr[w.col_ind[e]]++;
      ws.kblock[slot] = static_cast<std::int32_t>(i);
      ws.block[slot] = e;
    }
  }
  for (std::int64_t b = g.out_blocks; b > 0; --b) ptr[b] = ptr[b - 1];  // undo the fill's shift
  ptr[0] = 0;
  p.out_stride = w.block.rows;
  p.k_stride = 1;
  p.ptr = ptr;
  p.kblock = ws.kblock;
  p.block = ws.block;
}

// The transposed problem of `a`, its block index built where it needs one.
inline bsr_problem problem_of(const bsr_gemm_args& a, const geometry& g, const workspace_layout& ws) noexcept {
  bsr_problem p;
  p.m = a.m;
  p.n = a.n();
  p.k_pad = g.k_pad;
  p.width = g.width;
  p.depth = g.depth;
  p.values = a.w.values;
  p.xt = ws.xt;
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
    index_block_columns(a.w, g, ws, p);
  }
  return p;
}

// Packs and computes on up to `threads` threads (one without OpenMP): each packs a share of the
// panels, then, after one barrier, computes its range of output blocks.
inline void pack_and_compute(const bsr_gemm_config& build, const pack_problem& pk, const bsr_problem& p,
                             const geometry& g, int threads) noexcept {
  if (threads > g.out_blocks) threads = static_cast<int>(g.out_blocks);
  if (threads <= 1) {
    build.pack(pk, 0, g.panels);
    build.compute(p, 0, g.out_blocks);
    return;
  }
#ifdef _OPENMP
  const bsr_pack_fn pack = build.pack;
  const bsr_compute_fn compute = build.compute;
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

}  // namespace inferopt::sparse::detail

namespace inferopt::sparse {

inline bool is_available(cpu_isa isa) noexcept { return detail::bsr_gemm_configs_of_this_machine().of(isa).runs; }

inline cpu_isa resolve(cpu_isa isa) noexcept {
  return isa == cpu_isa::automatic ? detail::bsr_gemm_configs_of_this_machine().widest : isa;
}

inline const char* to_string(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::automatic: return "automatic";
    case cpu_isa::portable: return "portable";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx512: return "avx512";
  }
  return "automatic";
}

inline kernel_status can_implement(const bsr_gemm_args& a, const cpu_context& ctx) noexcept {
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
    if (const detail::bsr_gemm_config& build = detail::bsr_gemm_configs_of_this_machine().of(ctx.isa); !build.runs) {
      return {std::string(build.name) +
              (build.built ? ": this cpu lacks " + std::string(build.needs) : ": not in this build")};
    }
    if (a.m == 0 || n == 0) return {};
    if (a.y == nullptr) return {"y is null"};
    if (a.ldy < n) return {"ldy " + std::to_string(a.ldy) + " is less than n " + std::to_string(n)};
    if (k > 0 && a.x == nullptr) return {"x is null"};
    if (a.ldx < k) return {"ldx " + std::to_string(a.ldx) + " is less than k " + std::to_string(k)};
    if (w.block_rows() > 0 && w.row_ptr == nullptr) return {"w.row_ptr is null"};
    if (w.nnz_blocks > 0 && (w.col_ind == nullptr || w.values == nullptr)) return {"w.col_ind or w.values is null"};
    if (detail::overlaps(a.y, a.m, a.ldy, n, a.x, k > 0 ? (a.m - 1) * a.ldx + k : 0) ||
        detail::overlaps(a.y, a.m, a.ldy, n, a.bias, a.bias != nullptr ? n : 0) ||
        detail::overlaps(a.y, a.m, a.ldy, n, w.values, w.nnz_blocks * w.block.size())) {
      return {"y overlaps an input"};
    }
    return {};
  } catch (...) {  // std::to_string can only fail to allocate
    return {"out of memory"};
  }
}

inline std::size_t workspace_bytes(const bsr_gemm_args& a, const cpu_context& ctx) noexcept {
  if (a.m <= 0 || a.n() <= 0) return 0;
  const detail::geometry g = detail::geometry_of(a, detail::bsr_gemm_config_for(ctx.isa).panel_rows);
  return detail::workspace_alignment + g.xt_bytes + g.ptr_bytes + 2 * g.index_bytes;
}

inline void run(const bsr_gemm_args& a, std::span<std::byte> workspace, const cpu_context& ctx) noexcept {
  if (a.m <= 0 || a.n() <= 0) return;
  const detail::bsr_gemm_config& build = detail::bsr_gemm_config_for(ctx.isa);
  const detail::geometry g = detail::geometry_of(a, build.panel_rows);
  const detail::workspace_layout ws = detail::carve(workspace, g);
  const detail::bsr_problem p = detail::problem_of(a, g, ws);
  const detail::pack_problem pk{a.x, a.ldx, a.m, a.k(), g.k_pad, ws.xt};
  int threads = 1;
#ifdef _OPENMP
  threads = ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
#endif
  detail::pack_and_compute(build, pk, p, g, threads);
}

inline void bsr_gemm(const bsr_gemm_args& args, const cpu_context& ctx) {
  const kernel_status status = can_implement(args, ctx);
  if (!status) throw error(errc::invalid_argument, "bsr_gemm: " + status.reason);
  std::vector<std::byte> workspace(workspace_bytes(args, ctx));
  run(args, workspace, ctx);
}

}  // namespace inferopt::sparse
