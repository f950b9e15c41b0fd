// The body of the CPU block-sparse GEMM, compiled once per instruction set by
// bsr_gemm_{portable,avx2}.cpp. Include it only from those files, after defining
// INFEROPT_SPARSE_ISA (the namespace of the build) and, in an anonymous namespace of that
// namespace, a struct `ops` with the vector type and operations:
//   vec; zero(); load(p); broadcast(p); fma(a, b, acc) = a * b + acc; relu(v); store(p, v);
//   store_tile(acc[4][3], y, ldy): y[r * ldy + i] = lane r % 8 of acc[i][r / 8];
//   transpose_8x8(src, lds, dst, ldd): dst[c * ldd + r] = src[r * lds + c] for r, c < 8.
// Everything here has internal linkage, and no standard-library template is used: the linker
// must never merge an AVX2 instantiation into the portable build (or the other way round).
//
// Why the transposed problem (Y^T = S X^T, S = op(W)^T) and this register tile:
// - Vectorizing over rows of X (24 at a time) instead of over outputs makes every block shape
//   equally efficient: a 4x4 block would fill only half a vector in the output direction,
//   while m is large in every product we care about (128 tokens and more).
// - A tile of 4 outputs x 24 rows keeps 12 accumulators, three X^T vectors and one broadcast
//   weight in the 16 AVX2 registers; each reduction step is 3 loads + 4 broadcasts for 12
//   FMAs, so the FMA units, not the loads, set the pace. 4 divides every common block size.
// - Each tile accumulates over all the stored blocks of its output block before it is written,
//   so Y is written once, with bias and activation applied in registers. Threads own whole
//   output blocks (disjoint columns of Y): no atomics, no reduction, no barrier after packing.
//   Iterating W's block rows instead (for Y = X W, where they run along k) would scatter
//   partial sums over all of Y's columns and force a read-modify-write of Y per block; the
//   block-column index that avoids it costs O(blocks) per call.
// - X^T is packed once per call (O(m k), against O(m k n (1 - sparsity)) multiply-adds), into
//   panels 24 rows wide and zero-padded to whole blocks, so edge blocks need no masking.

#include <cstdint>

#include "bsr_gemm_isa.hpp"

namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA {

namespace {

using vec = ops::vec;
constexpr int vectors = static_cast<int>(panel_rows / 8);

std::int64_t smaller(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
std::int64_t larger(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

// A block shape known at compile time (the specialized micro-kernels) ...
template <std::int64_t Depth, std::int64_t OutStride, std::int64_t KStride>
struct fixed_shape {
  static constexpr std::int64_t depth() { return Depth; }
  static constexpr std::int64_t out_stride() { return OutStride; }
  static constexpr std::int64_t k_stride() { return KStride; }
};

// ... and one known at run time (any other block shape).
struct dynamic_shape {
  std::int64_t depth_, out_stride_, k_stride_;
  [[nodiscard]] std::int64_t depth() const { return depth_; }
  [[nodiscard]] std::int64_t out_stride() const { return out_stride_; }
  [[nodiscard]] std::int64_t k_stride() const { return k_stride_; }
};

// Outputs n0 .. n0 + Rows - 1 (the `first`-th output of block b onwards) for rows m0 .. m0 + 23
// of Y: the reduction over every stored block of output block b, then bias, activation, store.
// Used for the last 1 to 3 outputs of a block whose width is not a multiple of 4; `tile4`
// below is the same for four outputs.
template <int Rows, class Shape>
void tile(const bsr_problem& p, const Shape& s, std::int64_t b, std::int64_t first, const float* panel,
          std::int64_t m0) noexcept {
  const std::int64_t n0 = b * p.width + first;
  vec acc[Rows][vectors];
  for (int i = 0; i < Rows; ++i) {
    const vec init = p.bias != nullptr ? ops::broadcast(p.bias + n0 + i) : ops::zero();
    for (int j = 0; j < vectors; ++j) acc[i][j] = init;
  }
  const std::int64_t block_size = p.width * p.depth;
  const float* weights = p.values + first * s.out_stride();
  for (std::int32_t e = p.ptr[b]; e < p.ptr[b + 1]; ++e) {
    const float* x = panel + std::int64_t{p.kblock[e]} * s.depth() * panel_rows;
    const float* w = weights + (p.block != nullptr ? std::int64_t{p.block[e]} : std::int64_t{e}) * block_size;
    for (std::int64_t k = 0; k < s.depth(); ++k) {
      const vec x0 = ops::load(x + k * panel_rows);
      const vec x1 = ops::load(x + k * panel_rows + 8);
      const vec x2 = ops::load(x + k * panel_rows + 16);
#pragma GCC unroll 4
      for (int i = 0; i < Rows; ++i) {
        const vec wi = ops::broadcast(w + i * s.out_stride() + k * s.k_stride());
        acc[i][0] = ops::fma(wi, x0, acc[i][0]);
        acc[i][1] = ops::fma(wi, x1, acc[i][1]);
        acc[i][2] = ops::fma(wi, x2, acc[i][2]);
      }
    }
  }
  if (p.act == activation::relu) {
    for (int i = 0; i < Rows; ++i) {
      for (int j = 0; j < vectors; ++j) acc[i][j] = ops::relu(acc[i][j]);
    }
  }
  // The last panel (rows past m) and the last outputs of a block: through a buffer.
  alignas(32) float buffer[Rows][panel_rows];
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < vectors; ++j) ops::store(buffer[i] + 8 * j, acc[i][j]);
  }
  const std::int64_t rows = smaller(panel_rows, p.m - m0);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* y = p.y + (m0 + r) * p.ldy + n0;
    for (int i = 0; i < Rows; ++i) y[i] = buffer[i][r];
  }
}

// The hot case of `tile`: four outputs of a whole panel. Written with twelve named
// accumulators because GCC keeps an accumulator array in memory (three stores per step,
// which halved the speed) as soon as any loop indexes it before being unrolled.
template <class Shape>
void tile4(const bsr_problem& p, const Shape& s, std::int64_t b, std::int64_t first, const float* panel,
           std::int64_t m0) noexcept {
  const std::int64_t n0 = b * p.width + first;
  const bool bias = p.bias != nullptr;
  vec a00 = bias ? ops::broadcast(p.bias + n0) : ops::zero();
  vec a10 = bias ? ops::broadcast(p.bias + n0 + 1) : ops::zero();
  vec a20 = bias ? ops::broadcast(p.bias + n0 + 2) : ops::zero();
  vec a30 = bias ? ops::broadcast(p.bias + n0 + 3) : ops::zero();
  vec a01 = a00, a02 = a00, a11 = a10, a12 = a10, a21 = a20, a22 = a20, a31 = a30, a32 = a30;
  const std::int64_t block_size = p.width * p.depth;
  const float* weights = p.values + first * s.out_stride();
  const std::int64_t os = s.out_stride();
  for (std::int32_t e = p.ptr[b]; e < p.ptr[b + 1]; ++e) {
    const float* x = panel + std::int64_t{p.kblock[e]} * s.depth() * panel_rows;
    const float* w = weights + (p.block != nullptr ? std::int64_t{p.block[e]} : std::int64_t{e}) * block_size;
    for (std::int64_t k = 0; k < s.depth(); ++k) {
      const float* xk = x + k * panel_rows;
      const float* wk = w + k * s.k_stride();
      const vec x0 = ops::load(xk);
      const vec x1 = ops::load(xk + 8);
      const vec x2 = ops::load(xk + 16);
      vec wi = ops::broadcast(wk);
      a00 = ops::fma(wi, x0, a00);
      a01 = ops::fma(wi, x1, a01);
      a02 = ops::fma(wi, x2, a02);
      wi = ops::broadcast(wk + os);
      a10 = ops::fma(wi, x0, a10);
      a11 = ops::fma(wi, x1, a11);
      a12 = ops::fma(wi, x2, a12);
      wi = ops::broadcast(wk + 2 * os);
      a20 = ops::fma(wi, x0, a20);
      a21 = ops::fma(wi, x1, a21);
      a22 = ops::fma(wi, x2, a22);
      wi = ops::broadcast(wk + 3 * os);
      a30 = ops::fma(wi, x0, a30);
      a31 = ops::fma(wi, x1, a31);
      a32 = ops::fma(wi, x2, a32);
    }
  }
  vec out[tile_outputs][vectors] = {{a00, a01, a02}, {a10, a11, a12}, {a20, a21, a22}, {a30, a31, a32}};
  if (p.act == activation::relu) {
    for (auto& row : out) {
      for (vec& v : row) v = ops::relu(v);
    }
  }
  if (m0 + panel_rows <= p.m) {
    ops::store_tile(out, p.y + m0 * p.ldy + n0, p.ldy);
    return;
  }
  alignas(32) float buffer[tile_outputs][panel_rows];
  for (int i = 0; i < tile_outputs; ++i) {
    for (int j = 0; j < vectors; ++j) ops::store(buffer[i] + 8 * j, out[i][j]);
  }
  const std::int64_t rows = smaller(panel_rows, p.m - m0);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* y = p.y + (m0 + r) * p.ldy + n0;
    for (int i = 0; i < tile_outputs; ++i) y[i] = buffer[i][r];
  }
}

template <class Shape>
void compute_shape(const bsr_problem& p, const Shape& s, std::int64_t b0, std::int64_t b1) noexcept {
  const std::int64_t panels = (p.m + panel_rows - 1) / panel_rows;
  const std::int64_t panel_floats = p.k_pad * panel_rows;
  // Panels are taken in chunks whose X^T (about 512 KiB) stays in L2 while every output
  // block of this thread streams its weights past it.
  const std::int64_t chunk = larger(1, (std::int64_t{512} << 10) / 4 / larger(1, panel_floats));
  for (std::int64_t c0 = 0; c0 < panels; c0 += chunk) {
    const std::int64_t c1 = smaller(panels, c0 + chunk);
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t outputs = smaller(p.width, p.n - b * p.width);  // the last block may stick out
      for (std::int64_t q = c0; q < c1; ++q) {
        const float* panel = p.xt + q * panel_floats;
        const std::int64_t m0 = q * panel_rows;
        std::int64_t i = 0;
        for (; i + tile_outputs <= outputs; i += tile_outputs) tile4(p, s, b, i, panel, m0);
        switch (outputs - i) {
          case 3: tile<3>(p, s, b, i, panel, m0); break;
          case 2: tile<2>(p, s, b, i, panel, m0); break;
          case 1: tile<1>(p, s, b, i, panel, m0); break;
          default: break;
        }
      }
    }
  }
}

// Square blocks of the common sizes get kernels with a constant depth and strides. For
// Y = X W^T the block's outputs are its rows (column-major: output stride 1, step stride
// width); for Y = X W they are its columns (output stride depth, step stride 1).
template <std::int64_t Size>
bool compute_fixed(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept {
  if (p.width != Size || p.depth != Size) return false;
  if (p.out_stride == 1 && p.k_stride == Size) {
    compute_shape(p, fixed_shape<Size, 1, Size>{}, b0, b1);
    return true;
  }
  if (p.out_stride == Size && p.k_stride == 1) {
    compute_shape(p, fixed_shape<Size, Size, 1>{}, b0, b1);
    return true;
  }
  return false;
}

void pack_panel(const pack_problem& p, std::int64_t q) noexcept {
  float* out = p.xt + q * p.k_pad * panel_rows;
  const std::int64_t m0 = q * panel_rows;
  const std::int64_t rows = smaller(panel_rows, p.m - m0);
  std::int64_t k = 0;
  if (rows == panel_rows) {
    for (; k + 8 <= p.k; k += 8) {
      for (std::int64_t g = 0; g < panel_rows; g += 8) {
        ops::transpose_8x8(p.x + (m0 + g) * p.ldx + k, p.ldx, out + k * panel_rows + g, panel_rows);
      }
    }
  }
  for (; k < p.k; ++k) {
    for (std::int64_t r = 0; r < panel_rows; ++r) out[k * panel_rows + r] = r < rows ? p.x[(m0 + r) * p.ldx + k] : 0.0F;
  }
  for (; k < p.k_pad; ++k) {
    for (std::int64_t r = 0; r < panel_rows; ++r) out[k * panel_rows + r] = 0.0F;
  }
}

}  // namespace

void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept {
  for (std::int64_t q = p0; q < p1; ++q) pack_panel(p, q);
}

void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept {
  if (compute_fixed<4>(p, b0, b1) || compute_fixed<8>(p, b0, b1) || compute_fixed<16>(p, b0, b1) ||
      compute_fixed<32>(p, b0, b1)) {
    return;
  }
  compute_shape(p, dynamic_shape{p.depth, p.out_stride, p.k_stride}, b0, b1);
}

}  // namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA
