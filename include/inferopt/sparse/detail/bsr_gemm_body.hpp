// The body of the CPU block-sparse GEMM, included once per instruction set by
// bsr_gemm_{portable,avx2,avx512}.hpp, on purpose without #pragma once. Include it only from
// those files, inside their target region (the AVX2 and AVX-512 builds open one with
// `#pragma GCC target` or `#pragma clang attribute`, so every function here, lambdas and
// template instances included, gets the build's instruction set), after defining
// INFEROPT_SPARSE_ISA (the namespace of the build) and, in that namespace, the constants
// panel_rows and tile_outputs and a struct `ops` with the vector type and operations:
//   vec; lanes (floats per vec); zero(); load(p); broadcast(p); fma(a, b, acc) = a * b + acc;
//   relu(v); store(p, v);
//   store_columns4(a, b, c, d, y, ldy): y[r * ldy + 0 .. 3] = lane r of a, b, c, d, r < lanes;
//   transpose_8x8(src, lds, dst, ldd): dst[c * ldd + r] = src[r * lds + c] for r, c < 8.
// It includes nothing: a header first included inside a target region would have its inline
// functions compiled for that instruction set. Everything here lives in the build's namespace,
// and no standard-library template is used: the linker, which merges equal inline functions
// of all translation units, can then never hand an AVX2 or AVX-512 function to the portable
// build (or the other way round).
//
// Why the transposed problem (Y^T = S X^T, S = op(W)^T) and this register tile:
// - Vectorizing over rows of X (panel_rows at a time) instead of over outputs makes every block
//   shape equally efficient: a 4x4 block would fill only part of a vector in the output
//   direction, while m is large in every product we care about (128 tokens and more).
// - A tile of tile_outputs outputs x panel_rows rows keeps its accumulators, the X^T vectors
//   of one reduction step and a broadcast weight in registers; each step is panel_rows / lanes
//   loads + tile_outputs broadcasts for their product of FMAs, so the FMA units, not the
//   loads, set the pace. 4 divides every common block size.
// - Each tile accumulates over all the stored blocks of its output block before it is written,
//   so Y is written once, with bias and activation applied in registers. Threads own whole
//   output blocks (disjoint columns of Y): no atomics, no reduction, no barrier after packing.
//   Iterating W's block rows instead (for Y = X W, where they run along k) would scatter
//   partial sums over all of Y's columns and force a read-modify-write of Y per block; the
//   block-column index that avoids it costs O(blocks) per call.
// - X^T is packed once per call (O(m k), against O(m k n (1 - sparsity)) multiply-adds), into
//   panels panel_rows wide and zero-padded to whole blocks, so edge blocks need no masking.

namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA {

using vec = ops::vec;
constexpr int vectors = static_cast<int>(panel_rows / ops::lanes);
static_assert(panel_rows % ops::lanes == 0 && panel_rows % 8 == 0, "a panel is whole vectors and 8x8 tiles");

inline std::int64_t smaller(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
inline std::int64_t larger(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

// unroll<N>(f) calls f(index<0>{}), ..., f(index<N - 1>{}). The register tile indexes its
// accumulator array only with these compile-time indices: GCC keeps an array in memory (a
// store per multiply-add, which halved the speed) as soon as a loop indexes it before being
// unrolled, but gives each element its own register when every index is a constant.
template <int I>
struct index {
  static constexpr int value = I;
};

template <int N, int I = 0, class F>
[[gnu::always_inline]] inline void unroll(const F& f) {
  if constexpr (I < N) {
    f(index<I>{});
    unroll<N, I + 1>(f);
  }
}

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

// Outputs n0 .. n0 + Outputs - 1 (the `first`-th output of block b onwards) for rows
// m0 .. m0 + panel_rows - 1 of Y: the reduction over every stored block of output block b,
// then bias, activation, store. Outputs is tile_outputs except for the last outputs of a block
// whose width is not a multiple of it.
template <int Outputs, class Shape>
void tile(const bsr_problem& p, const Shape& s, std::int64_t b, std::int64_t first, const float* panel,
          std::int64_t m0) noexcept {
  const std::int64_t n0 = b * p.width + first;
  vec acc[Outputs][vectors];
  unroll<Outputs>([&](auto i) {
    const vec init = p.bias != nullptr ? ops::broadcast(p.bias + n0 + i.value) : ops::zero();
    unroll<vectors>([&](auto j) { acc[i.value][j.value] = init; });
  });
  const std::int64_t block_size = p.width * p.depth;
  const float* weights = p.values + first * s.out_stride();
  const std::int64_t os = s.out_stride();
  for (std::int32_t e = p.ptr[b]; e < p.ptr[b + 1]; ++e) {
    const float* x = panel + std::int64_t{p.kblock[e]} * s.depth() * panel_rows;
    const float* w = weights + (p.block != nullptr ? std::int64_t{p.block[e]} : std::int64_t{e}) * block_size;
    for (std::int64_t k = 0; k < s.depth(); ++k) {
      const float* xk = x + k * panel_rows;
      const float* wk = w + k * s.k_stride();
      vec xv[vectors];
      unroll<vectors>([&](auto j) { xv[j.value] = ops::load(xk + j.value * ops::lanes); });
      unroll<Outputs>([&](auto i) {
        const vec wi = ops::broadcast(wk + i.value * os);
        unroll<vectors>([&](auto j) { acc[i.value][j.value] = ops::fma(wi, xv[j.value], acc[i.value][j.value]); });
      });
    }
  }
  if (p.act == activation::relu) {
    unroll<Outputs>([&](auto i) {
      unroll<vectors>([&](auto j) { acc[i.value][j.value] = ops::relu(acc[i.value][j.value]); });
    });
  }
  if constexpr (Outputs % 4 == 0) {
    if (m0 + panel_rows <= p.m) {  // a whole panel: transposed in registers, 4 outputs at a time
      unroll<Outputs / 4>([&](auto g) {
        constexpr int i = 4 * decltype(g)::value;
        unroll<vectors>([&](auto j) {
          ops::store_columns4(acc[i][j.value], acc[i + 1][j.value], acc[i + 2][j.value], acc[i + 3][j.value],
                              p.y + (m0 + j.value * ops::lanes) * p.ldy + n0 + i, p.ldy);
        });
      });
      return;
    }
  }
  // The last panel (rows past m) and the last outputs of a block: through a buffer.
  alignas(64) float buffer[Outputs][panel_rows];
  unroll<Outputs>([&](auto i) {
    unroll<vectors>([&](auto j) { ops::store(buffer[i.value] + j.value * ops::lanes, acc[i.value][j.value]); });
  });
  const std::int64_t rows = smaller(panel_rows, p.m - m0);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* y = p.y + (m0 + r) * p.ldy + n0;
    for (int i = 0; i < Outputs; ++i) y[i] = buffer[i][r];
  }
}

// The last 1 .. Outputs outputs of a block whose width is not a multiple of tile_outputs.
template <int Outputs, class Shape>
void tail(std::int64_t left, const bsr_problem& p, const Shape& s, std::int64_t b, std::int64_t first,
          const float* panel, std::int64_t m0) noexcept {
  if constexpr (Outputs > 0) {
    if (left == Outputs) tile<Outputs>(p, s, b, first, panel, m0);
    else tail<Outputs - 1>(left, p, s, b, first, panel, m0);
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
        for (; i + tile_outputs <= outputs; i += tile_outputs) tile<tile_outputs>(p, s, b, i, panel, m0);
        if (i < outputs) tail<tile_outputs - 1>(outputs - i, p, s, b, i, panel, m0);
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

inline void pack_panel(const pack_problem& p, std::int64_t q) noexcept {
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

// The build's entry points (its bsr_gemm_config's pack and compute).
inline void pack(const pack_problem& p, std::int64_t p0, std::int64_t p1) noexcept {
  for (std::int64_t q = p0; q < p1; ++q) pack_panel(p, q);
}

inline void compute(const bsr_problem& p, std::int64_t b0, std::int64_t b1) noexcept {
  if (compute_fixed<4>(p, b0, b1) || compute_fixed<8>(p, b0, b1) || compute_fixed<16>(p, b0, b1) ||
      compute_fixed<32>(p, b0, b1)) {
    return;
  }
  compute_shape(p, dynamic_shape{p.depth, p.out_stride, p.k_stride}, b0, b1);
}

}  // namespace inferopt::sparse::detail::INFEROPT_SPARSE_ISA
