// The Eigen GEMM body, compiled once per instruction set by nn_gemm_{generic,avx2,avx512}.cpp.
// Include it only from those files, after defining INFEROPT_NN_GEMM_ISA (the namespace of the
// build), INFEROPT_NN_GEMM_NAME (its gemm_config::isa) and, for the ISA builds, `Eigen` as a
// renamed namespace. Everything but `config()` has internal linkage; every Eigen template is then
// instantiated in a namespace of its own, so the linker can never merge an AVX-512
// instantiation into code that runs on a CPU without it (or hand the AVX-512 file the
// SSE2 instantiation of a shared template). No standard-library template is used here for the
// same reason.

#include <Eigen/Core>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn_gemm.hpp"
#include "omp_team.hpp"

namespace inferopt::runtime::nn::INFEROPT_NN_GEMM_ISA {

namespace {

template <class T>
using row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using const_map = Eigen::Map<const row_major<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using map = Eigen::Map<row_major<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T, class A, class B>
void product(map<T>& c, const A& a, const B& b, T alpha, T beta) {
  if (beta == T(0)) {
    if (alpha == T(1)) c.noalias() = a * b;
    else c.noalias() = alpha * (a * b);
    return;
  }
  if (beta != T(1)) c *= beta;
  if (alpha == T(1)) c.noalias() += a * b;
  else c.noalias() += alpha * (a * b);
}

template <class T>
void run(const gemm_args<T>& g, int threads) noexcept {
  if (g.m <= 0 || g.n <= 0) return;
  map<T> c(g.c, g.m, g.n, Eigen::OuterStride<>(g.ldc));
  if (g.k <= 0) {
    if (g.beta == T(0)) c.setZero();
    else c *= g.beta;
    return;
  }
  // Eigen's products size their team from the calling thread's OpenMP ICV; setNbThreads
  // would write a process-wide static that concurrent sessions race on.
  const omp_team_for_call team(threads > 0 ? threads : 1);
  const const_map<T> a(g.a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, Eigen::OuterStride<>(g.lda));
  const const_map<T> b(g.b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, Eigen::OuterStride<>(g.ldb));
  if (!g.trans_a && !g.trans_b) product<T>(c, a, b, g.alpha, g.beta);
  else if (!g.trans_a) product<T>(c, a, b.transpose(), g.alpha, g.beta);
  else if (!g.trans_b) product<T>(c, a.transpose(), b, g.alpha, g.beta);
  else product<T>(c, a.transpose(), b.transpose(), g.alpha, g.beta);
}

// ---- packed products ---------------------------------------------------------------------
// In Eigen's column-major terms C^T[n x m] += B^T[n x k] * W^T[k x m]: the spatial dim n is
// GEBP's row dim (its register panels are mr rows tall), the output channels its columns.
// W^T is the right operand, packed block by block (kc x nc, Eigen's own blocking) in the order
// the loops below visit them; each block starts 64-byte aligned.

using index = Eigen::Index;
using traits = Eigen::internal::gebp_traits<float, float>;
using lhs_mapper = Eigen::internal::const_blas_data_mapper<float, index, Eigen::ColMajor>;
using res_mapper = Eigen::internal::blas_data_mapper<float, index, Eigen::ColMajor, Eigen::Unaligned, 1>;
using pack_lhs = Eigen::internal::gemm_pack_lhs<float, index, lhs_mapper, traits::mr, traits::LhsProgress,
                                                typename traits::LhsPacket4Packing, Eigen::ColMajor>;
using pack_rhs = Eigen::internal::gemm_pack_rhs<float, index, lhs_mapper, traits::nr, Eigen::ColMajor>;
using gebp = Eigen::internal::gebp_kernel<float, float, index, res_mapper, traits::mr, traits::nr, false, false>;

// Plain helpers instead of std::min/max: no standard template is instantiated in this file.
index smaller(index a, index b) { return a < b ? a : b; }
index larger(index a, index b) { return a > b ? a : b; }
index round_up(index v, index unit) { return (v + unit - 1) / unit * unit; }
constexpr index block_alignment = 16;  // floats: 64 bytes

struct blocking {
  index kc, nc;
};

// Eigen's heuristic for depth k and m output channels. The spatial size is unknown when the
// weights are packed; a typical one stands in (kc and nc hardly depend on it).
blocking blocking_for(index m, index k) {
  index kc = k, rows = 1024, nc = m;
  Eigen::internal::computeProductBlockingSizes<float, float, 1>(kc, rows, nc, index(1));
  return {larger(kc, 1), larger(nc, 1)};
}

// A grow-only 64-byte aligned buffer per thread.
struct aligned_block {
  float* data = nullptr;
  index size = 0;
  aligned_block() = default;
  aligned_block(const aligned_block&) = delete;
  aligned_block& operator=(const aligned_block&) = delete;
  ~aligned_block() { Eigen::internal::aligned_free(data); }
  float* get(index n) {
    if (n > size) {
      Eigen::internal::aligned_free(data);
      data = static_cast<float*>(Eigen::internal::aligned_malloc(sizeof(float) * static_cast<std::size_t>(n)));
      size = n;
    }
    return data;
  }
};
thread_local aligned_block packed_lhs_block;
thread_local aligned_block source_block;

struct packed_problem {
  const float* packed;
  index m, k, n;
  const float* b;
  index ldb;
  panel_source source;
  const void* context;
  const float* bias;
  const epilogue<float>* ep;  // null: no residual, identity activation
  float* c;
  index ldc;
  blocking bl;
  index mc;
};

// Rows [r0, r1) (spatial) and columns [c0, c1) (output channels) of C.
void packed_part(const packed_problem& p, index r0, index r1, index c0, index c1) {
  if (r0 >= r1 || c0 >= c1) return;
  float* block_a = packed_lhs_block.get(p.bl.kc * p.mc);
  float* panel = p.b ? nullptr : source_block.get(p.bl.kc * p.mc);
  const res_mapper res(p.c, p.ldc);
  for (index i2 = r0; i2 < r1; i2 += p.mc) {
    const index mc = smaller(p.mc, r1 - i2);
    // The tile's initial value, written while it is about to be accumulated into.
    const float* residual = p.ep ? p.ep->residual : nullptr;
    for (index j = c0; j < c1; ++j) {
      float* row = p.c + j * p.ldc + i2;
      const float v = p.bias ? p.bias[j] : 0.0f;
      if (residual) {
        const float* z = residual + j * p.ep->ldr + i2;
        for (index i = 0; i < mc; ++i) row[i] = v + z[i];
      } else {
        for (index i = 0; i < mc; ++i) row[i] = v;
      }
    }
    const float* block_b = p.packed;
    for (index k2 = 0; k2 < p.k; k2 += p.bl.kc) {
      const index kc = smaller(p.bl.kc, p.k - k2);
      if (p.b) {
        pack_lhs()(block_a, lhs_mapper(p.b + k2 * p.ldb + i2, p.ldb), kc, mc);
      } else {
        p.source(p.context, k2, k2 + kc, i2, i2 + mc, panel, mc);
        pack_lhs()(block_a, lhs_mapper(panel, mc), kc, mc);
      }
      for (index j2 = 0; j2 < p.m; j2 += p.bl.nc) {
        const index nc = smaller(p.bl.nc, p.m - j2);
        const index lo = larger(c0, j2), hi = smaller(c1, j2 + nc);
        // Column j of a packed block starts at j * kc (nr-wide panels interleave their
        // columns), so a range starting on a panel boundary is a valid block of its own.
        if (lo < hi) gebp()(res.getSubMapper(i2, lo), block_a, block_b + (lo - j2) * kc, mc, kc, hi - lo, 1.0f);
        block_b += round_up(kc * nc, block_alignment);
      }
    }
    // The tile is complete: activate it before moving on (activate is the baseline build's).
    if (p.ep && p.ep->act.kind != activation::identity) {
      for (index j = c0; j < c1; ++j) activate(p.ep->act, p.c + j * p.ldc + i2, mc);
    }
  }
}

// Start of part t of `parts` over [0, total), on multiples of `unit`.
index split_point(index total, index t, index parts, index unit) {
  if (t >= parts) return total;
  return total * t / parts / unit * unit;
}

// ---- the entry points (gemm_config's fields) -----------------------------------------------

void gemm_f32(const gemm_args<float>& args, int threads) noexcept { run(args, threads); }
void gemm_f64(const gemm_args<double>& args, int threads) noexcept { run(args, threads); }

std::size_t packed_size(std::int64_t m, std::int64_t k) noexcept {
  if (m <= 0 || k <= 0) return 0;
  const blocking bl = blocking_for(m, k);
  index size = 0;
  for (index k2 = 0; k2 < k; k2 += bl.kc) {
    for (index j2 = 0; j2 < m; j2 += bl.nc) size += round_up(smaller(bl.kc, k - k2) * smaller(bl.nc, m - j2), block_alignment);
  }
  return static_cast<std::size_t>(size);
}

void pack_weights(const float* w, std::int64_t m, std::int64_t k, float* out, int threads) noexcept {
  if (m <= 0 || k <= 0) return;
  const blocking bl = blocking_for(m, k);
  const lhs_mapper rhs(w, k);  // W^T, column-major with leading dim k
  const index column_blocks = (m + bl.nc - 1) / bl.nc, blocks = ((k + bl.kc - 1) / bl.kc) * column_blocks;
  // Block b (depth block b / column_blocks, column block b % column_blocks) starts after all
  // blocks before it; only the last depth block and the last column block are shorter.
  auto offset_of = [&](index b) {
    const index kb = b / column_blocks, jb = b % column_blocks;
    index offset = 0;
    for (index k2 = 0; k2 < kb * bl.kc; k2 += bl.kc) {
      for (index j2 = 0; j2 < m; j2 += bl.nc) offset += round_up(smaller(bl.kc, k - k2) * smaller(bl.nc, m - j2), block_alignment);
    }
    for (index j2 = 0; j2 < jb * bl.nc; j2 += bl.nc) {
      offset += round_up(smaller(bl.kc, k - kb * bl.kc) * smaller(bl.nc, m - j2), block_alignment);
    }
    return offset;
  };
  auto pack_block = [&](index b) {
    const index k2 = (b / column_blocks) * bl.kc, j2 = (b % column_blocks) * bl.nc;
    pack_rhs()(out + offset_of(b), rhs.getSubMapper(k2, j2), smaller(bl.kc, k - k2), smaller(bl.nc, m - j2));
  };
#ifdef _OPENMP
  if (threads > 1 && blocks > 1) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (index b = 0; b < blocks; ++b) pack_block(b);
    return;
  }
#endif
  for (index b = 0; b < blocks; ++b) pack_block(b);
}

void gemm_packed(const float* packed, std::int64_t m, std::int64_t k, std::int64_t n, const float* b,
                 std::int64_t ldb, panel_source source, const void* context, const float* bias, const epilogue<float>* ep, float* c,
                 std::int64_t ldc, int threads) noexcept {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (index j = 0; j < m; ++j) {
      float* row = c + j * ldc;
      for (index i = 0; i < n; ++i) row[i] = (bias ? bias[j] : 0.0f) + (ep && ep->residual ? ep->residual[j * ep->ldr + i] : 0.0f);
      if (ep) activate(ep->act, row, n);
    }
    return;
  }
  packed_problem p{packed, m, k, n, b, ldb, source, context, bias, ep, c, ldc, blocking_for(m, k), 0};
  index kc = k, mc = n, nc = m;
  Eigen::internal::computeProductBlockingSizes<float, float, 1>(kc, mc, nc, index(1));
  p.mc = larger(smaller(mc, n), 1);
  if (threads <= 1) {
    packed_part(p, 0, n, 0, m);
    return;
  }
#ifdef _OPENMP
  if (n >= 256 * static_cast<index>(threads)) {
    // Many spatial rows: split them into chunks of at least 4 register panels, up to 4 per
    // thread, taken dynamically (a thread that is held up does not hold up the others). Each
    // chunk packs only its own rows; the packed weights are shared.
    const index chunks = smaller(4 * static_cast<index>(threads), larger(1, n / (4 * traits::mr)));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (index ch = 0; ch < chunks; ++ch) {
      packed_part(p, split_point(n, ch, chunks, traits::mr), split_point(n, ch + 1, chunks, traits::mr), 0, m);
    }
  } else {
    // Few rows (late layers, 7x7 maps): split the output channels; each thread packs all rows.
#pragma omp parallel num_threads(threads)
    {
      const index t = omp_get_thread_num(), parts = omp_get_num_threads();
      packed_part(p, 0, n, split_point(m, t, parts, traits::nr), split_point(m, t + 1, parts, traits::nr));
    }
  }
#else
  packed_part(p, 0, n, 0, m);
#endif
}

}  // namespace

const gemm_config* config() noexcept {
  static constexpr gemm_config build{INFEROPT_NN_GEMM_NAME, gemm_f32, gemm_f64, packed_size, pack_weights, gemm_packed};
  return &build;
}

}  // namespace inferopt::runtime::nn::INFEROPT_NN_GEMM_ISA
